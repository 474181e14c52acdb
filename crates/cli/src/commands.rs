//! The commands: each combines the pure pieces with the Kubernetes I/O of [`crate::kube_io`].

use crate::args::DryRun;
use crate::args::{
    Cli, Command, CompletionArgs, DataFormat, DeleteArgs, GlobalArgs, ListArgs, ListFormat, MigrateArgs,
    NameArgs, PlanArgs, RequestArgs, ResizeArgs, RollbackArgs, StatusArgs, VersionArgs,
};
use crate::exit::{CliError, ExitCode};
use crate::kube_io::{Action, Cluster, RESIZES, connect};
use crate::migrate::MEASURED_COPY_BYTES_PER_SECOND;
use crate::output::print_data;
use crate::render;
use crate::request::{self, RequestError};
use crate::style::{RED, Style, YELLOW};
use crate::watch;
use clap::CommandFactory;
use ferry_api::listed::ListedResize;
use ferry_api::{ChosenStrategy, Phase, VolumeResize, parse_bytes};
use kube::ResourceExt;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Runs the command; prints errors as `error: …` on stderr and returns the exit code.
pub async fn run(cli: Cli) -> ExitCode {
    let style = Style::detect(cli.global.color);
    let err_style = Style::detect_stderr(cli.global.color);
    match execute(cli, style).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{} {error}", err_style.paint(RED, "error:"));
            error.exit_code()
        }
    }
}

async fn execute(cli: Cli, style: Style) -> Result<ExitCode, CliError> {
    if let Command::Completion(args) = &cli.command {
        return completion(args);
    }
    if let Command::Version(args) = &cli.command {
        return version(&cli.global, args).await;
    }
    // A dry run needs no cluster; --apply connects by itself.
    if let Command::Import(args) = &cli.command {
        return crate::import::run(&cli.global, args).await;
    }
    // Validate what needs no cluster first, so usage errors never wait on the network.
    if let Command::Resize(ResizeArgs { request, .. }) | Command::Plan(PlanArgs { request, .. }) =
        &cli.command
    {
        pair(request)?;
    }
    if let Command::Plan(args) = &cli.command {
        assumed_rate(&args.rate)?;
    }
    let migration = match &cli.command {
        Command::Migrate(args) => Some(migrate_rate(args)?),
        _ => None,
    };
    let cluster = connect(&cli.global).await?;
    match cli.command {
        Command::Resize(args) => resize(&cluster, args, style).await,
        Command::Plan(args) => plan(&cluster, args, style).await,
        Command::List(args) => list(&cluster, args, style).await,
        Command::Describe(args) => describe(&cluster, args, style).await,
        Command::Status(args) => status(&cluster, args, style).await,
        Command::Watch(args) if args.output.is_some() => {
            let format = args.output.unwrap_or(DataFormat::Json);
            follow_documents(&cluster, &args.name, interval(args.interval)?, None, format).await
        }
        Command::Watch(args) => {
            watch::watch(
                &cluster,
                &args.name,
                interval(args.interval)?,
                style,
                std::io::stdout().is_terminal(),
            )
            .await
        }
        Command::Rollback(args) => rollback(&cluster, args, style).await,
        Command::Delete(args) => delete(&cluster, args).await,
        Command::Completion(args) => completion(&args),
        Command::Version(args) => version(&cli.global, &args).await,
        Command::Import(args) => crate::import::run(&cli.global, &args).await,
        Command::Migrate(args) => {
            let rate = migration.unwrap_or(MEASURED_COPY_BYTES_PER_SECOND);
            crate::migrate::run::migrate(&cluster, &migrate_request(&args, rate), style).await
        }
        Command::Report(args) => {
            let request = crate::report::run::ReportRequest {
                all_namespaces: args.all_namespaces,
                selector: args.selector.as_deref(),
                prices: args.prices,
                fill_percent: args.fill,
                output: args.output,
            };
            crate::report::run::run(&cluster, &request, style).await
        }
        Command::Drain(args) => {
            let request = crate::drain::run::DrainRequest {
                node: &args.node,
                namespace: cli.global.namespace.as_deref(),
                dry_run: args.dry_run,
                watch: args.watch,
            };
            crate::drain::run::drain(&cluster, &request, style).await
        }
    }
}

/// `version`: the client's, then (unless `--client`) the operators the cluster runs. A cluster
/// that cannot be reached is an error, after the client's version.
async fn version(global: &GlobalArgs, args: &VersionArgs) -> Result<ExitCode, CliError> {
    let client = env!("CARGO_PKG_VERSION");
    let (operators, webhooks) = if args.client {
        (None, None)
    } else {
        match connect(global).await {
            Ok(cluster) => {
                let (operators, reach) = tokio::join!(cluster.operators(), cluster.webhook_reach());
                let webhooks = crate::version::WebhookCheck {
                    namespace: cluster.namespace.clone(),
                    reach,
                };
                (Some(operators), Some(webhooks))
            }
            Err(error) => {
                crate::out!("{}", crate::version::text(client, None, None));
                return Err(error);
            }
        }
    };
    match &args.output {
        Some(DataFormat::Name) => {
            return Err(CliError::Usage(
                "version prints -o json, -o yaml or -o jsonpath, not -o name".to_string(),
            ));
        }
        Some(format) => print_data(
            &crate::version::report(client, operators.as_ref(), webhooks.as_ref()),
            format,
        )?,
        None => crate::out!(
            "{}",
            crate::version::text(client, operators.as_ref(), webhooks.as_ref())
        ),
    }
    Ok(ExitCode::Ok)
}

/// A poll interval: any positive duration.
fn interval(value: Duration) -> Result<Duration, CliError> {
    if value.is_zero() {
        return Err(CliError::Usage(
            "--interval 0: give a positive duration such as 500ms or 2s".into(),
        ));
    }
    Ok(value)
}

/// A `--timeout` with 0 for none: the moment to give up, if any.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    (!timeout.is_zero()).then(|| Instant::now() + timeout)
}

/// What `migrate` is asked, its flags read.
fn migrate_request(args: &MigrateArgs, bytes_per_second: u64) -> crate::migrate::run::MigrateRequest<'_> {
    crate::migrate::run::MigrateRequest {
        from_class: &args.from_class,
        to_class: &args.to_class,
        all_namespaces: args.all_namespaces,
        selector: args.selector.as_deref(),
        bytes_per_second,
        rate_given: args.rate.is_some(),
        output: args.output.as_ref(),
        carry: (!args.plan).then_some(crate::migrate::carry::Carry {
            name: args.name.as_deref(),
            selector: args.selector.as_deref(),
            max_concurrent: args.max_concurrent,
            failure_policy: match args.failure_policy {
                crate::args::FailurePolicyArg::Stop => ferry_api::MigrationFailurePolicy::Stop,
                crate::args::FailurePolicyArg::Continue => ferry_api::MigrationFailurePolicy::Continue,
            },
            watch: args.watch,
        }),
    }
}

/// Checks a `migrate` request before connecting; its copy throughput.
fn migrate_rate(args: &MigrateArgs) -> Result<u64, CliError> {
    if !args.plan && args.output.is_some() {
        return Err(CliError::Usage(
            "-o prints a plan: give --plan with it (without --plan, migrate creates VolumeMigrations \
             and says so)"
                .into(),
        ));
    }
    if !args.plan
        && let Some(selector) = &args.selector
    {
        crate::migrate::carry::label_selector(selector).map_err(CliError::Usage)?;
    }
    crate::migrate::check_classes(&args.from_class, &args.to_class).map_err(CliError::Usage)?;
    if args.output == Some(DataFormat::Name) {
        return Err(CliError::Usage(
            "migrate prints -o json, -o yaml or -o jsonpath, not -o name (a plan has no name)".into(),
        ));
    }
    match &args.rate {
        Some(text) => match assumed_rate(text)? {
            0 => Err(CliError::Usage(
                "--rate 0: give a positive rate such as 100Mi".into(),
            )),
            rate => Ok(rate),
        },
        None => Ok(MEASURED_COPY_BYTES_PER_SECOND),
    }
}

fn assumed_rate(text: &str) -> Result<u64, CliError> {
    parse_bytes(text).map_err(|e| CliError::Usage(format!("--rate: {e}")))
}

fn request_error(error: RequestError) -> CliError {
    match error {
        RequestError::TemplateNotFound { .. } => CliError::NotFound(error.to_string()),
        RequestError::Usage(_) | RequestError::InvalidSize { .. } => CliError::Usage(error.to_string()),
    }
}

fn pair(args: &RequestArgs) -> Result<Vec<request::VolumeRequest>, CliError> {
    request::check_bandwidth_limit(args.bandwidth_limit.as_deref()).map_err(request_error)?;
    let classes = request::ClassFlags {
        storage: &args.storage_classes,
        attributes: &args.attributes_classes,
    };
    request::pair_volumes(&args.volumes, &args.sizes, classes).map_err(request_error)
}

/// Validates the request against the cluster and builds the object to create.
async fn build(
    cluster: &Cluster,
    args: &RequestArgs,
    dry_run: bool,
    plan: bool,
) -> Result<(VolumeResize, Vec<request::Template>), CliError> {
    let requests = pair(args)?;
    cluster.require_crd().await?;
    let resolved;
    let args = match request::owner_reference(&args.stateful_set) {
        Some((kind, name)) => {
            resolved = RequestArgs {
                stateful_set: cluster.owned_stateful_set(kind, name).await?,
                ..args.clone()
            };
            &resolved
        }
        None => args,
    };
    let templates = cluster.templates(&args.stateful_set).await?;
    let volumes = request::resolve(&args.stateful_set, &requests, &templates).map_err(request_error)?;
    let mut checked = Vec::new();
    for class in volumes.iter().filter_map(|v| v.storage_class_name.as_deref()) {
        if !checked.contains(&class) {
            cluster.check_storage_class(class).await?;
            checked.push(class);
        }
    }
    let spec = request::build_spec(args, volumes, dry_run);
    let mut resize = VolumeResize::new("", spec);
    resize.metadata = ObjectMeta {
        name: args.name.clone(),
        generate_name: args
            .name
            .is_none()
            .then(|| request::generate_name(&args.stateful_set, plan)),
        namespace: Some(cluster.namespace.clone()),
        ..Default::default()
    };
    Ok((resize, templates))
}

async fn create(cluster: &Cluster, resize: &VolumeResize) -> Result<VolumeResize, CliError> {
    create_with(cluster, resize, false).await
}

/// Creates the VolumeResize, or (`dry_run`) has the API server check and admit it without
/// storing it.
async fn create_with(
    cluster: &Cluster,
    resize: &VolumeResize,
    dry_run: bool,
) -> Result<VolumeResize, CliError> {
    let params = PostParams {
        dry_run,
        ..PostParams::default()
    };
    match cluster.resizes().create(&params, resize).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(status)) if status.code == 409 => Err(CliError::Failed(format!(
            "a VolumeResize named {:?} already exists in namespace {:?}; choose another --name",
            resize.metadata.name.as_deref().unwrap_or_default(),
            cluster.namespace
        ))),
        Err(error) => Err(cluster.explain(error, Action::new("create", RESIZES)).await),
    }
}

async fn resize(cluster: &Cluster, args: ResizeArgs, style: Style) -> Result<ExitCode, CliError> {
    if args.watch && matches!(args.dry_run, Some(DryRun::Client | DryRun::Server)) {
        return Err(CliError::Usage(
            "--watch has nothing to watch with --dry-run=client or server (nothing is created)".to_string(),
        ));
    }
    let planned = args.dry_run == Some(DryRun::Plan);
    let (object, templates) = build(cluster, &args.request, planned, false).await?;
    let (created, suffix) = match args.dry_run {
        Some(DryRun::Client) => (object, " (dry run)"),
        Some(DryRun::Server) => (create_with(cluster, &object, true).await?, " (server dry run)"),
        Some(DryRun::Plan) => (create(cluster, &object).await?, " (dry run)"),
        None => (create(cluster, &object).await?, ""),
    };
    let name = created
        .metadata
        .name
        .clone()
        .or_else(|| created.metadata.generate_name.clone())
        .unwrap_or_default();
    // Made with no operator to act on it, it would wait without a word: say so.
    if matches!(args.dry_run, None | Some(DryRun::Plan)) && cluster.operators().await.none_running() {
        eprintln!(
            "warning: no Ferry operator runs in this cluster (no pod and no leader Lease renewed lately labelled {}): VolumeResize {name} waits until one does",
            crate::version::OPERATOR_SELECTOR
        );
    }
    if let Some(format) = args.output {
        print_data(&created, &format)?;
    } else {
        crate::outln!("volumeresize.ferry.dev/{name} created{suffix}");
        for volume in &created.spec.volumes {
            let current = templates.iter().find(|t| t.name == volume.name);
            let from = current.and_then(|t| t.size.clone()).unwrap_or_else(|| "?".into());
            let mut line = format!(
                "  StatefulSet {}, volume {}: {from} -> {}",
                created.spec.stateful_set_name, volume.name, volume.size
            );
            if let Some(class) = &volume.storage_class_name {
                let old = current
                    .and_then(|t| t.storage_class.clone())
                    .unwrap_or_else(|| "(default)".into());
                line.push_str(&format!(", StorageClass {old} -> {class}"));
            }
            crate::outln!("{line}");
        }
        crate::outln!(
            "  mode {}, strategy {}, verify {}, warm copy {}",
            render::mode_name(created.spec.mode),
            render::strategy_name(created.spec.strategy),
            render::verify_name(created.spec.verify),
            if created.spec.warm_copy { "on" } else { "off" }
        );
        if !args.watch && matches!(args.dry_run, None | Some(DryRun::Plan)) {
            crate::outln!(
                "Follow it with: kubectl ferry watch {name} -n {}",
                cluster.namespace
            );
        }
    }
    if args.watch {
        return watch::watch(
            cluster,
            &name,
            Duration::from_secs(1),
            style,
            std::io::stdout().is_terminal(),
        )
        .await;
    }
    Ok(ExitCode::Ok)
}

async fn plan(cluster: &Cluster, args: PlanArgs, style: Style) -> Result<ExitCode, CliError> {
    let rate = assumed_rate(&args.rate)?;
    let (object, _) = build(cluster, &args.request, true, true).await?;
    let created = create(cluster, &object).await?;
    let name = created.name_any();
    let api = cluster.resizes();
    let deadline = Instant::now() + args.timeout;
    let outcome = loop {
        match cluster.get_resize_opt(&name).await {
            Ok(Some(resize)) if resize.phase().is_terminal() => break Ok(resize),
            Ok(Some(resize)) if Instant::now() >= deadline => {
                let why = resize
                    .status
                    .as_ref()
                    .and_then(|s| s.message.clone())
                    .unwrap_or_else(|| "no status yet: is the Ferry operator running?".into());
                break Err(CliError::InProgress(format!(
                    "the operator did not finish planning {name} within {:?} ({}: {why})",
                    args.timeout,
                    resize.phase().as_str()
                )));
            }
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(300)).await,
            Ok(None) => {
                break Err(CliError::NotFound(format!(
                    "the dry-run VolumeResize {name} was deleted before it was planned"
                )));
            }
            Err(error) => break Err(error),
        }
    };
    if !args.keep {
        let _ = api.delete(&name, &DeleteParams::default()).await;
    }
    let resize = outcome?;
    match args.output {
        Some(format) => print_data(&resize, &format)?,
        None => {
            // Measured by the copies this namespace finished, where there are any.
            let finished = api
                .list(&Default::default())
                .await
                .map(|list| list.items)
                .unwrap_or_default();
            let rate = crate::rate::Rate::measured_or(&finished, rate);
            crate::out!("{}", render::plan_text(&resize, rate, style));
            if args.keep {
                crate::outln!("Kept the dry-run VolumeResize {name}.");
            }
        }
    }
    Ok(match resize.phase() {
        Phase::Failed => ExitCode::Failed,
        _ => ExitCode::Ok,
    })
}

async fn list(cluster: &Cluster, args: ListArgs, style: Style) -> Result<ExitCode, CliError> {
    let mut items = cluster.list_resizes(args.all_namespaces).await?;
    items.sort_by_key(|item| match item {
        ListedResize::Readable(resize) => (resize.namespace(), resize.name_any()),
        ListedResize::Unreadable(unreadable) => (unreadable.namespace(), unreadable.name()),
    });
    // One this kubectl-ferry cannot read is listed (a row, or its raw object), and said on stderr.
    let warning = warning_style(style).paint(YELLOW, "warning:");
    for item in &items {
        if let ListedResize::Unreadable(unreadable) = item {
            eprintln!("{warning} {}", render::unreadable_message(unreadable));
        }
    }
    match args.output {
        Some(ListFormat::Data(DataFormat::Name)) => {
            for item in &items {
                let name = match item {
                    ListedResize::Readable(resize) => resize.name_any(),
                    ListedResize::Unreadable(unreadable) => unreadable.name(),
                };
                crate::outln!("volumeresize.ferry.dev/{name}");
            }
        }
        Some(ListFormat::Data(format)) => {
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": list_items(&items)?,
            });
            print_data(&list, &format)?;
        }
        wide => {
            if items.is_empty() {
                if args.all_namespaces {
                    eprintln!("No VolumeResizes found.");
                } else {
                    eprintln!("No VolumeResizes found in namespace {}.", cluster.namespace);
                }
            } else {
                crate::out!(
                    "{}",
                    render::list_table(
                        &items,
                        jiff::Timestamp::now(),
                        args.all_namespaces,
                        wide.is_some(),
                        style
                    )
                );
            }
        }
    }
    Ok(ExitCode::Ok)
}

/// The objects of `-o json|yaml`: each readable one as this version reads it, each unreadable one
/// raw, as the API server returned it.
fn list_items(items: &[ListedResize]) -> Result<Vec<serde_json::Value>, CliError> {
    items
        .iter()
        .map(|item| match item {
            ListedResize::Readable(resize) => serde_json::to_value(resize),
            ListedResize::Unreadable(unreadable) => serde_json::to_value(&unreadable.object),
        })
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::Failed(format!("cannot render the list: {e}")))
}

/// The style of `warning:` on stderr: colored when stdout is and stderr may be.
fn warning_style(style: Style) -> Style {
    let stderr = Style::detect_stderr(crate::args::ColorChoice::Auto);
    Style {
        color: style.color && stderr.color,
    }
}

async fn describe(cluster: &Cluster, args: NameArgs, style: Style) -> Result<ExitCode, CliError> {
    let resize = cluster.get_resize(&args.name).await?;
    let now = jiff::Timestamp::now();
    let events = cluster.events(&args.name, now).await;
    crate::out!("{}", render::describe_text(&resize, &events, now, style));
    Ok(ExitCode::Ok)
}

async fn status(cluster: &Cluster, args: StatusArgs, style: Style) -> Result<ExitCode, CliError> {
    let mut resize = cluster.get_resize(&args.name).await?;
    if let Some(format) = args.output {
        if !args.follow {
            print_data(&status_document(&resize), &format)?;
            return Ok(ExitCode::for_phase(resize.phase()));
        }
        let deadline = deadline_after(args.timeout);
        return follow_documents(cluster, &args.name, interval(args.interval)?, deadline, format).await;
    }
    if !args.follow {
        crate::out!("{}", render::status_text(&resize, style));
        return Ok(ExitCode::for_phase(resize.phase()));
    }
    let interval = interval(args.interval)?;
    let deadline = deadline_after(args.timeout);
    let mut last = String::new();
    loop {
        let headline = render::headline(&resize, style);
        if headline != last {
            crate::outln!("{headline}");
            last = headline;
        }
        if resize.phase().is_terminal() {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(CliError::InProgress(format!(
                "{} is still {} after {:?}",
                args.name,
                resize.phase().as_str(),
                args.timeout
            )));
        }
        tokio::time::sleep(interval).await;
        resize = cluster.get_resize(&args.name).await?;
    }
    if let Some(status) = &resize.status {
        for row in &status.plan {
            crate::outln!("  {}", render::row_line(row));
        }
    }
    Ok(ExitCode::for_phase(resize.phase()))
}

/// What `status -o` and `watch -o` print of a VolumeResize: its name, namespace, phase and status
/// (a `kind` and `metadata.name` too, so `-o name` works on it).
fn status_document(resize: &VolumeResize) -> serde_json::Value {
    serde_json::json!({
        "kind": "VolumeResize",
        "metadata": {"name": resize.name_any(), "namespace": resize.namespace()},
        "phase": resize.phase().as_str(),
        "status": resize.status,
    })
}

/// One document per change of the VolumeResize's status until it ends (exit code of its phase),
/// or `deadline` passes (exit 5): compact JSON lines, YAML documents, or its name once.
pub async fn follow_documents(
    cluster: &Cluster,
    name: &str,
    interval: Duration,
    deadline: Option<Instant>,
    format: DataFormat,
) -> Result<ExitCode, CliError> {
    let mut last = None;
    loop {
        let resize = cluster.get_resize(name).await?;
        let document = status_document(&resize);
        if last.as_ref() != Some(&document) {
            match &format {
                DataFormat::Json => crate::outln!("{document}"),
                DataFormat::Yaml => {
                    crate::outln!("---");
                    print_data(&document, &format)?;
                }
                DataFormat::Name if last.is_none() => print_data(&document, &format)?,
                DataFormat::Name => {}
                // One filled template per change, a line each.
                DataFormat::JsonPath(template) => crate::outln!("{}", template.render(&document)),
            }
            last = Some(document);
        }
        if resize.phase().is_terminal() {
            return Ok(ExitCode::for_phase(resize.phase()));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(CliError::InProgress(format!(
                "{name} is still {}",
                resize.phase().as_str()
            )));
        }
        tokio::time::sleep(interval).await;
    }
}

/// Why a rollback cannot be asked for, or None when it can.
pub fn rollback_refusal(resize: &VolumeResize) -> Option<String> {
    let name = resize.name_any();
    if resize.spec.dry_run {
        return Some(format!(
            "{name} is a dry run: it changed nothing, so there is nothing to roll back"
        ));
    }
    let phase = resize.phase();
    if matches!(phase, Phase::Pending | Phase::Planning) {
        return Some(format!(
            "{name} is {}: no volume has been changed yet, so there is nothing to roll back \
             (to cancel it: kubectl ferry delete {name})",
            phase.as_str()
        ));
    }
    let plan = resize
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default();
    if phase == Phase::Failed && plan.is_empty() {
        return Some(format!(
            "{name} failed before changing anything ({}); there is nothing to roll back",
            resize
                .status
                .as_ref()
                .and_then(|s| s.message.clone())
                .unwrap_or_default()
        ));
    }
    if !plan.is_empty() && plan.iter().all(|r| r.strategy == Some(ChosenStrategy::InPlace)) {
        return Some(format!(
            "{name} expanded its volumes in place; an expansion cannot be undone (volumes cannot \
             shrink in place). Create a new resize with --strategy copy instead"
        ));
    }
    None
}

async fn rollback(cluster: &Cluster, args: RollbackArgs, style: Style) -> Result<ExitCode, CliError> {
    let resize = cluster.get_resize(&args.name).await?;
    if let Some(refusal) = rollback_refusal(&resize) {
        return Err(CliError::Failed(refusal));
    }
    if resize.phase() == ferry_api::Phase::RollingBack {
        crate::outln!("volumeresize.ferry.dev/{} is already rolling back", args.name);
        return Ok(ExitCode::Ok);
    }
    let already = resize
        .annotations()
        .get(crate::ANNOTATION_ROLLBACK_REQUESTED)
        .is_some_and(|v| v == "true");
    if !already {
        confirm_rollback(&args, style).await?;
        let patch = serde_json::json!({
            "metadata": {"annotations": {crate::ANNOTATION_ROLLBACK_REQUESTED: "true"}}
        });
        if let Err(error) = cluster
            .resizes()
            .patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            return Err(cluster
                .explain(error, Action::named("patch", RESIZES, &args.name))
                .await);
        }
    }
    eprintln!(
        "{} rolling back re-binds the old volumes and restores the StatefulSet from its backup: \
         writes made to the new volumes since the swap are lost.",
        warning_style(style).paint(YELLOW, "warning:")
    );
    crate::outln!(
        "volumeresize.ferry.dev/{} rollback {}requested",
        args.name,
        if already { "already " } else { "" }
    );
    Ok(ExitCode::Ok)
}

/// Whether a rollback may be requested without asking: `--yes`, else a yes typed on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consent {
    Given,
    Ask,
    /// No `--yes` and no terminal to ask on (a script, CI): refused, nothing changes.
    Missing,
}

fn rollback_consent(yes: bool, terminal: bool) -> Consent {
    match (yes, terminal) {
        (true, _) => Consent::Given,
        (false, true) => Consent::Ask,
        (false, false) => Consent::Missing,
    }
}

/// A typed answer that means yes.
fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Asks before a rollback loses the writes made since the swap, as `kubectl delete` asks nothing but
/// `helm rollback`'s users expect to be asked: on a terminal a prompt, elsewhere `--yes` is required.
async fn confirm_rollback(args: &RollbackArgs, style: Style) -> Result<(), CliError> {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    match rollback_consent(args.yes, terminal) {
        Consent::Given => Ok(()),
        Consent::Missing => Err(CliError::Usage(format!(
            "rolling back volumeresize.ferry.dev/{} loses the writes made to the new volumes since the \
             swap: confirm with --yes (there is no terminal to ask on)",
            args.name
        ))),
        Consent::Ask => {
            eprint!(
                "{} rolling back volumeresize.ferry.dev/{} re-binds the old volumes: writes made to the new \
                 volumes since the swap are lost. Roll back? [y/N] ",
                warning_style(style).paint(YELLOW, "warning:"),
                args.name
            );
            let answer = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await
            .map_err(|error| CliError::Failed(format!("could not read the answer: {error}")))?
            .map_err(|error| CliError::Failed(format!("could not read the answer: {error}")))?;
            if is_yes(&answer) {
                Ok(())
            } else {
                Err(CliError::Failed(format!(
                    "rollback of volumeresize.ferry.dev/{} not confirmed; nothing changed",
                    args.name
                )))
            }
        }
    }
}

async fn delete(cluster: &Cluster, args: DeleteArgs) -> Result<ExitCode, CliError> {
    // One this kubectl-ferry cannot read can still be deleted (the remedy its InvalidObject Event
    // gives); only its phase is unknown.
    let listed = cluster.get_listed(&args.name).await?;
    if let Err(error) = cluster
        .resizes()
        .delete(&args.name, &DeleteParams::default())
        .await
    {
        return Err(cluster
            .explain(error, Action::named("delete", RESIZES, &args.name))
            .await);
    }
    if args.output.is_some() {
        crate::outln!("volumeresize.ferry.dev/{}", args.name);
    } else {
        crate::outln!("volumeresize.ferry.dev \"{}\" deleted", args.name);
    }
    if let Some(note) = deleted_note(&listed) {
        eprintln!("note: {note}");
    }
    Ok(ExitCode::Ok)
}

/// What to add after deleting a resize: it may have been at work, or could not be read.
pub fn deleted_note(deleted: &ListedResize) -> Option<String> {
    match deleted {
        ListedResize::Readable(resize) => matches!(
            resize.phase(),
            Phase::Running | Phase::Paused | Phase::RollingBack
        )
        .then(|| {
            format!(
                "it was {}; the operator stops at the next safe point and finishes or rolls back \
                     the current replica",
                resize.phase().as_str()
            )
        }),
        ListedResize::Unreadable(unreadable) => Some(format!(
            "{}. Its phase is unknown: if a Ferry that can read it was running it, that one stops at \
             the next safe point",
            render::unreadable_message(unreadable)
        )),
    }
}

fn completion(args: &CompletionArgs) -> Result<ExitCode, CliError> {
    // Complete the plugin binary itself (kubectl also runs `kubectl_complete-ferry` if present).
    let mut command = Cli::command().bin_name("kubectl-ferry");
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "kubectl-ferry", &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    fn migrate_args(extra: &[&str]) -> MigrateArgs {
        let mut words = vec![
            "kubectl-ferry",
            "migrate",
            "--from-class",
            "old",
            "--to-class",
            "new",
        ];
        words.extend(extra);
        match Cli::try_parse_from(words).unwrap().command {
            Command::Migrate(args) => args,
            other => panic!("not migrate: {other:?}"),
        }
    }

    #[test]
    fn migrate_is_checked_before_connecting() {
        // Carried out: -o belongs to a plan, and -l must fit a selector's matchLabels.
        assert_eq!(
            migrate_rate(&migrate_args(&[])),
            Ok(MEASURED_COPY_BYTES_PER_SECOND)
        );
        for wrong in [vec!["-o", "json"], vec!["-l", "tier!=db"]] {
            let error = migrate_rate(&migrate_args(&wrong)).unwrap_err();
            assert_eq!(error.exit_code(), ExitCode::Usage, "{wrong:?}");
        }
        assert!(
            Cli::try_parse_from([
                "kubectl-ferry",
                "migrate",
                "--from-class",
                "a",
                "--to-class",
                "b",
                "--plan",
                "--watch"
            ])
            .is_err()
        );
        assert_eq!(
            migrate_rate(&migrate_args(&["--plan"])),
            Ok(MEASURED_COPY_BYTES_PER_SECOND)
        );
        assert_eq!(
            migrate_rate(&migrate_args(&["--plan", "--rate", "50Mi"])),
            Ok(50 << 20)
        );
        for wrong in [vec!["--plan", "--rate", "0"], vec!["--plan", "-o", "name"]] {
            let error = migrate_rate(&migrate_args(&wrong)).unwrap_err();
            assert_eq!(error.exit_code(), ExitCode::Usage, "{wrong:?}");
        }
        let same = Cli::try_parse_from([
            "kubectl-ferry",
            "migrate",
            "--from-class",
            "a",
            "--to-class",
            "a",
            "--plan",
        ])
        .unwrap();
        let Command::Migrate(same) = same.command else {
            panic!("not migrate")
        };
        assert!(
            migrate_rate(&same)
                .unwrap_err()
                .to_string()
                .contains("both \"a\"")
        );
    }

    fn resize(spec_extra: serde_json::Value, status: serde_json::Value) -> VolumeResize {
        let mut spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            spec.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow"}, "spec": spec, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_rollback_needs_yes_or_a_terminal_to_ask_on() {
        assert_eq!(rollback_consent(true, false), Consent::Given);
        assert_eq!(rollback_consent(true, true), Consent::Given);
        assert_eq!(rollback_consent(false, true), Consent::Ask);
        assert_eq!(rollback_consent(false, false), Consent::Missing);
        for answer in ["y\n", "Y", " yes \n", "YES"] {
            assert!(is_yes(answer), "{answer:?}");
        }
        for answer in ["", "\n", "n", "no", "yep", "y es"] {
            assert!(!is_yes(answer), "{answer:?}");
        }
    }

    #[test]
    fn rollback_is_refused_when_nothing_changed() {
        let pending = resize(json!({}), json!({"phase": "Pending"}));
        assert!(
            rollback_refusal(&pending)
                .unwrap()
                .contains("nothing to roll back")
        );
        let dry = resize(json!({"dryRun": true}), json!({"phase": "Succeeded"}));
        assert!(rollback_refusal(&dry).unwrap().contains("dry run"));
        let failed_early = resize(json!({}), json!({"phase": "Failed", "message": "no sts"}));
        assert!(
            rollback_refusal(&failed_early)
                .unwrap()
                .contains("failed before changing anything")
        );
        let in_place = resize(
            json!({}),
            json!({"phase": "Succeeded", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "InPlace", "targetSize": "2Gi"}]}),
        );
        assert!(rollback_refusal(&in_place).unwrap().contains("cannot be undone"));
    }

    #[test]
    fn rollback_is_allowed_after_a_copy() {
        let copied = resize(
            json!({}),
            json!({"phase": "Succeeded", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "Copy", "targetSize": "2Gi"}]}),
        );
        assert_eq!(rollback_refusal(&copied), None);
        let running = resize(
            json!({}),
            json!({"phase": "Running", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "Copy", "targetSize": "2Gi"}]}),
        );
        assert_eq!(rollback_refusal(&running), None);
    }

    /// As listed: `Teleporting` is a row step only a newer Ferry knows.
    fn unreadable() -> ListedResize {
        ListedResize::from_object(
            serde_json::from_value(json!({
                "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
                "metadata": {"name": "future", "namespace": "prod"},
                "spec": {"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi"}]},
                "status": {"phase": "Running", "plan": [{"replica": 0, "volume": "data",
                    "claimName": "data-web-0", "targetSize": "2Gi", "step": "Teleporting"}]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn a_command_naming_an_unreadable_resize_fails_naming_it_and_the_parse_error() {
        let error = crate::kube_io::readable(unreadable()).unwrap_err();
        assert_eq!(error.exit_code(), ExitCode::Cluster);
        let message = error.to_string();
        assert!(
            message.contains("\"future\"") && message.contains("Teleporting"),
            "{message}"
        );
        let readable = ListedResize::Readable(Box::new(resize(json!({}), json!({"phase": "Running"}))));
        assert_eq!(crate::kube_io::readable(readable).unwrap().name_any(), "grow");
    }

    #[test]
    fn json_output_keeps_an_unreadable_resize_raw() {
        let items = [
            ListedResize::Readable(Box::new(resize(json!({}), json!({"phase": "Running"})))),
            unreadable(),
        ];
        let values = list_items(&items).unwrap();
        assert_eq!(values[0]["metadata"]["name"], "grow");
        assert_eq!(values[1]["metadata"]["name"], "future");
        assert_eq!(values[1]["status"]["plan"][0]["step"], "Teleporting");
    }

    #[test]
    fn deleting_notes_a_running_or_an_unreadable_resize() {
        let running = ListedResize::Readable(Box::new(resize(json!({}), json!({"phase": "Running"}))));
        assert!(deleted_note(&running).is_some_and(|note| note.starts_with("it was Running")));
        let done = ListedResize::Readable(Box::new(resize(json!({}), json!({"phase": "Succeeded"}))));
        assert_eq!(deleted_note(&done), None);
        assert!(
            deleted_note(&unreadable())
                .is_some_and(|note| note.contains("cannot be read") && note.contains("phase is unknown"))
        );
    }

    #[test]
    fn request_errors_map_to_exit_codes() {
        let not_found = request_error(RequestError::TemplateNotFound {
            stateful_set: "db".into(),
            name: "x".into(),
            available: vec!["data".into()],
        });
        assert_eq!(not_found.exit_code(), ExitCode::NotFound);
        assert_eq!(
            request_error(RequestError::Usage("u".into())).exit_code(),
            ExitCode::Usage
        );
        assert_eq!(interval(Duration::ZERO).unwrap_err().exit_code(), ExitCode::Usage);
        assert_eq!(assumed_rate("1x").unwrap_err().exit_code(), ExitCode::Usage);
    }
}
