//! Command-line flags, parsed by clap.

use crate::duration::parse_duration;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-ferry",
    bin_name = "kubectl ferry",
    version,
    about = "Change StatefulSet volumes safely with Ferry: grow, shrink, move to another StorageClass",
    after_help = "Exit codes: 0 ok, 1 resize failed or request refused, 2 usage error, \
3 not found, 4 cluster unreachable / forbidden / CRD missing, 5 still in progress."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Connection flags, as kubectl has them.
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Namespace (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// When to use colors and progress bars.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Act as this user (impersonation, as kubectl's --as).
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Act with this group too (repeatable; needs --as).
    #[arg(long = "as-group", global = true, value_name = "GROUP", requires = "as_user")]
    pub as_groups: Vec<String>,
    /// How long one request may take before it is given up: 30s, 1m, 1m30s, or a number of
    /// seconds; 0 waits as long as it takes (default 30s).
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    pub request_timeout: Option<Duration>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a VolumeResize for a StatefulSet.
    Resize(ResizeArgs),
    /// Show what a resize would do (a dry-run VolumeResize); changes nothing.
    Plan(PlanArgs),
    /// List VolumeResizes.
    #[command(visible_alias = "ls", visible_alias = "get")]
    List(ListArgs),
    /// Show a VolumeResize in full: spec, plan, progress, conditions, Events, objects made.
    Describe(NameArgs),
    /// Print the phase of a VolumeResize; exit 0 on Succeeded, 1 on Failed, 5 while in progress.
    Status(StatusArgs),
    /// Live progress per replica and volume until the VolumeResize finishes.
    Watch(WatchArgs),
    /// Ask the operator to roll a VolumeResize back (writes made since the swap are lost).
    Rollback(RollbackArgs),
    /// Delete a VolumeResize (a running one stops at the next safe point).
    Delete(DeleteArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
    /// Print this plugin's version and the Ferry operators running in the cluster (or that none is).
    Version(VersionArgs),
    /// Move every replica's volumes bound to NODE alone (local PVs, a zone of one node) to other
    /// nodes: cordons NODE, then one VolumeResize per StatefulSet moves its replicas there one at
    /// a time while the others serve. Returns once every move ended; exit 0 only if all moved.
    /// Every namespace unless -n is given.
    Drain(DrainArgs),
    /// Plan moving every StatefulSet volume on one StorageClass to another: which StatefulSets,
    /// their claims' sizes and estimated copy times, what is refused and what is left alone, and
    /// why (--plan); without --plan, carry it out: a VolumeMigration in each namespace where
    /// something moves, which the operator runs a few StatefulSets at a time.
    Migrate(MigrateArgs),
    /// For each StatefulSet volume: its size, the data on it, the size that would hold that data
    /// (at most --fill full), and what the smaller size would save a month at the price per GiB of
    /// its class; largest saving first. Reads only.
    Report(ReportArgs),
    /// Translate the objects of the systems Ferry replaces (volmig, quarks, pong1013's and vshn's
    /// annotations) into Ferry's: printed (a dry run, no cluster needed), or created with --apply.
    Import(ImportArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  # Every namespace, at the prices the chart set (storagePrices)
  kubectl ferry report -A

  # Namespace prod at 0.08 per GiB and month on gp3, as CSV
  kubectl ferry report -n prod --price gp3=0.08 -o csv")]
pub struct ReportArgs {
    /// Every namespace (else the one of -n, or the context's).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only StatefulSets with these labels (`key=value,...`, as kubectl's -l).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// The price of a GiB a month on a StorageClass, over the chart's (repeat per class).
    #[arg(long = "price", value_name = "CLASS=AMOUNT", value_parser = parse_price)]
    pub prices: Vec<(String, f64)>,
    /// The fullest, in percent, a recommended size may be with the data on it now (the
    /// autoscaler's default threshold).
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub fill: u8,
    /// Print the report as data instead of a table.
    #[arg(short, long, value_enum)]
    pub output: Option<ReportFormat>,
}

#[derive(Args, Debug)]
pub struct DrainArgs {
    /// The node to move volumes off.
    pub node: String,
    /// Print what would move and why anything cannot; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print each move's progress as it changes.
    #[arg(short, long)]
    pub watch: bool,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  # What moving every volume of class gp2 to gp3 in all namespaces would take
  kubectl ferry migrate --from-class gp2 --to-class gp3 -A --plan

  # Only the StatefulSets labelled tier=db in namespace prod, as JSON
  kubectl ferry migrate --from-class gp2 --to-class gp3 -n prod -l tier=db --plan -o json

  # Estimates at the throughput measured on your own disks
  kubectl ferry migrate --from-class old --to-class new -A --plan --rate 150Mi

  # Carry it out in namespace prod, two StatefulSets at a time, and follow it to its end
  kubectl ferry migrate --from-class gp2 --to-class gp3 -n prod --max-concurrent 2 --watch")]
pub struct MigrateArgs {
    /// The StorageClass to leave: StatefulSets with a volume claim template on it are selected (a
    /// template naming no class is on the cluster's default class).
    #[arg(long, value_name = "CLASS")]
    pub from_class: String,
    /// The StorageClass to move to; it must exist.
    #[arg(long, value_name = "CLASS")]
    pub to_class: String,
    /// Every namespace (else the one of -n, or the context's).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only StatefulSets with these labels (`key=value,...`, as kubectl's -l); unowned claims are
    /// listed only when they carry them too.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Print the plan and change nothing. Without it, a VolumeMigration is created in each
    /// namespace where something moves (docs/volume-migration.md).
    #[arg(long)]
    pub plan: bool,
    /// The VolumeMigrations' name (default: `<from>-to-<to>`).
    #[arg(long, value_name = "NAME", conflicts_with = "plan")]
    pub name: Option<String>,
    /// Most StatefulSets moving at once in each namespace.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=100), conflicts_with = "plan")]
    pub max_concurrent: i32,
    /// After a StatefulSet's move failed: stop starting others (stop), or go on (continue).
    #[arg(long, value_enum, default_value = "stop", conflicts_with = "plan")]
    pub failure_policy: FailurePolicyArg,
    /// Follow the migrations until every one ended; exit 0 only if every StatefulSet moved.
    #[arg(short, long, conflicts_with = "plan")]
    pub watch: bool,
    /// Copy throughput the estimates assume, per second (default: the one measured in
    /// docs/benchmarks.md, 380Mi).
    #[arg(long, value_name = "QUANTITY_PER_SECOND")]
    pub rate: Option<String>,
    /// Print the plan as data instead of text.
    #[arg(short, long, value_parser = DataFormat::parse, value_name = "json|yaml|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

/// `--failure-policy`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicyArg {
    Stop,
    Continue,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file to read (`-` for stdin): YAML or JSON documents, or a List as `kubectl get -o
    /// yaml` prints it (add the claims, `kubectl get sts,pvc`, for a vshn resize still pending).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: String,
    /// Create the objects: each checked by the API server first, then all applied server-side
    /// (field manager kubectl-ferry). Without it nothing is sent to the cluster.
    #[arg(long)]
    pub apply: bool,
    /// What the dry run prints: yaml (default; the notes as comments) or json (a List; the notes
    /// on stderr).
    #[arg(short = 'o', long, value_enum, conflicts_with = "apply")]
    pub output: Option<ImportFormat>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    Yaml,
    Json,
}

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Only this plugin's version; the cluster is not asked.
    #[arg(long)]
    pub client: bool,
    /// Print as data instead of text.
    #[arg(short, long, value_parser = DataFormat::parse, value_name = "json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

/// What to change: shared by `resize` and `plan`.
#[derive(Args, Debug, Clone, Default)]
pub struct RequestArgs {
    /// The StatefulSet whose volumes change, or the resource of the operator that owns it
    /// (`prometheus/k8s`, `KIND/NAME`): the one StatefulSet it controls.
    #[arg(value_name = "STATEFULSET|KIND/NAME")]
    pub stateful_set: String,
    /// A volume claim template to change: NAME or NAME=SIZE (repeatable).
    #[arg(long = "volume", value_name = "NAME[=SIZE]")]
    pub volumes: Vec<String>,
    /// New size: one value for every --volume without =SIZE, or one per such --volume, in order.
    #[arg(long = "size", value_name = "QUANTITY")]
    pub sizes: Vec<String>,
    /// Target StorageClass: CLASS for every volume, one per --volume in order, or NAME=CLASS.
    #[arg(long = "storage-class", value_name = "[NAME=]CLASS")]
    pub storage_classes: Vec<String>,
    /// Target VolumeAttributesClass (a tier the driver changes in place): CLASS for every volume,
    /// one per --volume in order, or NAME=CLASS. Without --size a volume keeps its size.
    #[arg(long = "attributes-class", value_name = "[NAME=]CLASS")]
    pub attributes_classes: Vec<String>,
    /// Rolling: one replica at a time; Offline: scale to zero, all volumes in parallel.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// auto: expand in place where possible, else copy; inplace: only expand; copy: always copy.
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// Copy cold, after the replica stopped (default: warm copy while it runs, then a final sync).
    #[arg(long)]
    pub no_warm_copy: bool,
    /// Make the warm copy as a CSI clone of the old volume where the driver can (same driver, at
    /// least the old size); the mover copies elsewhere, or if no clone comes within 120 s.
    #[arg(long, conflicts_with = "no_warm_copy")]
    pub clone: bool,
    /// How copied data is verified (default checksum).
    #[arg(long, value_enum)]
    pub verify: Option<VerifyArg>,
    /// How long old volumes are kept after a copy: e.g. 24h, 7d, or Forever.
    #[arg(long, value_name = "DURATION")]
    pub retain_old_volumes: Option<String>,
    /// Most bytes per second each mover pod writes, e.g. 50Mi (default: no limit).
    #[arg(long, value_name = "QUANTITY")]
    pub bandwidth_limit: Option<String>,
    /// Start even when the StatefulSet is not fully Ready (a replica that is down goes first; a
    /// second one is never taken down).
    #[arg(long)]
    pub force: bool,
    /// Resize a StatefulSet that another controller owns as if nobody owned it
    /// (`spec.ownerPolicy: Ignore`): needed for an owner Ferry does not know, whose operator may
    /// then undo the change (docs/owned-statefulsets.md).
    #[arg(long)]
    pub ignore_owner: bool,
    /// Name of the VolumeResize (default: generated from the StatefulSet name).
    #[arg(long)]
    pub name: Option<String>,
}

#[derive(Args, Debug)]
pub struct ResizeArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// client: print what would be created, send nothing; server: the API server checks it
    /// (admission included) and keeps nothing; plan: create a dry-run VolumeResize the operator only
    /// plans, and keep it (see also `plan`). Bare `--dry-run` is `client`, as in kubectl.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", value_name = "MODE")]
    pub dry_run: Option<DryRun>,
    /// After creating, show live progress until it finishes (exit code as `status`).
    #[arg(long)]
    pub watch: bool,
    /// Print the created object as json or yaml instead of a summary.
    #[arg(short = 'o', long, value_parser = DataFormat::parse, value_name = "json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Keep the dry-run VolumeResize instead of deleting it after printing.
    #[arg(long)]
    pub keep: bool,
    /// How long to wait for the operator to fill in the plan (500ms, 30s, 1m30s; a bare number is
    /// seconds).
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// Copy throughput assumed for the time estimate when the status has no measured rate.
    #[arg(long, default_value = "100Mi", value_name = "QUANTITY_PER_SECOND")]
    pub rate: String,
    /// Print the planned VolumeResize as json or yaml instead of a table.
    #[arg(short = 'o', long, value_parser = DataFormat::parse, value_name = "json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// List in every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Output format.
    #[arg(short = 'o', long, value_parser = ListFormat::parse, value_name = "wide|json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<ListFormat>,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// Name of the VolumeResize.
    pub name: String,
    /// `name`: print only `volumeresize.ferry.dev/NAME`, as `kubectl delete -o name`.
    #[arg(short = 'o', long, value_parser = ["name"], value_name = "name")]
    pub output: Option<String>,
}

#[derive(Args, Debug)]
pub struct NameArgs {
    /// Name of the VolumeResize.
    pub name: String,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Name of the VolumeResize.
    pub name: String,
    /// Wait until it Succeeds or Fails, printing each change.
    #[arg(short, long)]
    pub follow: bool,
    /// Time between polls with --follow (500ms, 2s; a bare number is seconds).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub interval: Duration,
    /// Give up after this long with --follow (exit 5), e.g. 5m; 0 waits forever.
    #[arg(long, default_value = "0", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// Print the name, phase and status as data (with --follow: one JSON line, or one YAML
    /// document, per change).
    #[arg(short, long, value_parser = DataFormat::parse, value_name = "json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Name of the VolumeResize.
    pub name: String,
    /// Time between polls (500ms, 2s; a bare number is seconds).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub interval: Duration,
    /// Instead of progress bars or lines: the name, phase and status as data, one JSON line (or
    /// YAML document) per change, until it finishes.
    #[arg(short, long, value_parser = DataFormat::parse, value_name = "json|yaml|name|jsonpath=TEMPLATE")]
    pub output: Option<DataFormat>,
}

#[derive(Args, Debug)]
pub struct RollbackArgs {
    /// Name of the VolumeResize.
    pub name: String,
    /// Roll back without asking (writes made to the new volumes since the swap are lost). Without
    /// it the command asks on a terminal and refuses elsewhere.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Rolling,
    Offline,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    Auto,
    Inplace,
    Copy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VerifyArg {
    None,
    Metadata,
    Checksum,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    /// Print what would be created; send nothing.
    Client,
    /// Send it with `dryRun=All`: validated and admitted by the API server, never stored.
    Server,
    /// Create a VolumeResize with `dryRun: true`: the operator plans it and changes nothing.
    Plan,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataFormat {
    Json,
    Yaml,
    /// `volumeresize.ferry.dev/NAME`, as `kubectl -o name`.
    Name,
    /// `jsonpath=TEMPLATE`, as kubectl's.
    JsonPath(crate::jsonpath::Template),
}

impl DataFormat {
    /// `-o json|yaml|name|jsonpath=TEMPLATE` (kubectl's spellings, `jsonpath='...'` quoted too).
    pub fn parse(text: &str) -> Result<DataFormat, String> {
        match text {
            "json" => Ok(DataFormat::Json),
            "yaml" => Ok(DataFormat::Yaml),
            "name" => Ok(DataFormat::Name),
            _ => match text.strip_prefix("jsonpath=") {
                Some(template) => crate::jsonpath::Template::parse(template).map(DataFormat::JsonPath),
                None => Err(format!(
                    "{text:?} is not an output format: json, yaml, name or jsonpath=TEMPLATE"
                )),
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Wide,
    /// json, yaml, name or jsonpath, of the List of them.
    Data(DataFormat),
}

impl ListFormat {
    pub fn parse(text: &str) -> Result<ListFormat, String> {
        match text {
            "wide" => Ok(ListFormat::Wide),
            _ if text.starts_with("jsonpath=") => DataFormat::parse(text).map(ListFormat::Data),
            _ => DataFormat::parse(text).map(ListFormat::Data).map_err(|_| {
                format!("{text:?} is not an output format: wide, json, yaml, name or jsonpath=TEMPLATE")
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_a_resize_with_global_flags_anywhere() {
        let cli = Cli::try_parse_from([
            "kubectl-ferry",
            "resize",
            "db",
            "--volume",
            "data=20Gi",
            "-n",
            "prod",
            "--mode",
            "offline",
            "--no-warm-copy",
        ])
        .unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("prod"));
        let Command::Resize(args) = cli.command else {
            panic!("not resize")
        };
        assert_eq!(args.request.volumes, ["data=20Gi"]);
        assert_eq!(args.request.mode, Some(ModeArg::Offline));
        assert!(args.request.no_warm_copy);
    }

    #[test]
    fn import_reads_a_file_and_prints_unless_told_to_apply() {
        let cli = Cli::try_parse_from(["kubectl-ferry", "import", "-f", "-", "-o", "json"]).unwrap();
        let Command::Import(args) = cli.command else {
            panic!("not import")
        };
        assert_eq!(
            (args.filename.as_str(), args.apply, args.output),
            ("-", false, Some(ImportFormat::Json))
        );
        let cli =
            Cli::try_parse_from(["kubectl-ferry", "import", "--filename", "a.yaml", "--apply"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Import(ImportArgs {
                apply: true,
                output: None,
                ..
            })
        ));
        for wrong in [
            vec!["kubectl-ferry", "import"],
            vec!["kubectl-ferry", "import", "-f", "a.yaml", "--apply", "-o", "yaml"],
            vec!["kubectl-ferry", "import", "-f", "a.yaml", "-o", "name"],
        ] {
            assert_eq!(
                Cli::try_parse_from(&wrong).unwrap_err().exit_code(),
                2,
                "{wrong:?}"
            );
        }
    }

    #[test]
    fn unknown_flags_are_usage_errors() {
        let error = Cli::try_parse_from(["kubectl-ferry", "list", "--bogus"]).unwrap_err();
        assert_eq!(error.exit_code(), 2);
    }
}

/// `-o`: how the report is printed (a table without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Json,
    Yaml,
    Csv,
}

/// `--price CLASS=AMOUNT` (per GiB and month, a decimal number).
pub fn parse_price(text: &str) -> Result<(String, f64), String> {
    let (class, amount) = text
        .split_once('=')
        .ok_or_else(|| format!("--price {text:?}: give CLASS=AMOUNT, e.g. gp3=0.08"))?;
    let amount: f64 = amount
        .trim()
        .parse()
        .map_err(|_| format!("--price {text:?}: {amount:?} is not a number"))?;
    if class.is_empty() || !amount.is_finite() || amount < 0.0 {
        return Err(format!(
            "--price {text:?}: a class name and a price of 0 or more per GiB and month"
        ));
    }
    Ok((class.to_string(), amount))
}
