//! Dynamic completion through kubectl's plugin completion: for `kubectl ferry <TAB>`, kubectl
//! (1.26 and later) runs `kubectl_complete-ferry` with the words typed after `ferry`, the last
//! being the one to complete, and reads one candidate per line and then `:<directive>` (Cobra's
//! protocol; 4 = no file completion). What to offer is decided here, from the words alone; the
//! binary reads the names from the cluster.

use clap::CommandFactory;

/// The subcommands, as `kubectl ferry` defines them.
pub fn commands() -> Vec<String> {
    crate::Cli::command()
        .get_subcommands()
        .map(|command| command.get_name().to_string())
        .collect()
}

/// Cobra's "no file completion" directive.
pub const NO_FILE_COMPLETION: u8 = 4;
/// Cobra's default directive: the shell completes file names.
pub const FILE_COMPLETION: u8 = 0;

/// What the word being typed is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    Commands,
    Namespaces,
    StatefulSets,
    /// The volume claim templates of this StatefulSet.
    Templates(String),
    StorageClasses,
    VolumeResizes,
    /// A file name (`import -f`): left to the shell.
    Files,
    Nothing,
}

/// What the connection flags typed so far say: the namespace, kubeconfig and context to ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Typed {
    pub namespace: Option<String>,
    pub kubeconfig: Option<String>,
    pub context: Option<String>,
}

/// Whether `flag` (`-n`, `--volume`) takes a value, so the next word is that value, not an
/// argument: as `kubectl ferry` defines its flags, global or of any command.
fn takes_value(flag: &str) -> bool {
    let command = crate::Cli::command();
    let matches = |arg: &clap::Arg| match flag.strip_prefix("--") {
        Some(long) => arg.get_long() == Some(long),
        None => flag.len() == 2 && arg.get_short().is_some_and(|short| flag.ends_with(short)),
    };
    std::iter::once(&command)
        .chain(command.get_subcommands())
        .flat_map(|command| command.get_arguments())
        .any(|arg| matches(arg) && arg.get_action().takes_values())
}

/// What to offer for the last of `words` (the words after `ferry`), and the connection flags typed.
pub fn wanted(words: &[String]) -> (Wanted, Typed) {
    let Some((_current, before)) = words.split_last() else {
        return (Wanted::Commands, Typed::default());
    };
    let mut typed = Typed::default();
    let mut positional: Vec<&str> = Vec::new();
    let mut index = 0;
    while index < before.len() {
        let word = before[index].as_str();
        if let Some((flag, value)) = word.split_once('=').filter(|(flag, _)| flag.starts_with('-')) {
            remember(&mut typed, flag, value);
        } else if word.starts_with('-') && takes_value(word) {
            if let Some(value) = before.get(index + 1) {
                remember(&mut typed, word, value);
            }
            index += 1;
        } else if !word.starts_with('-') {
            positional.push(word);
        }
        index += 1;
    }
    let wanted = match before.last().map(String::as_str) {
        Some("-n" | "--namespace") => Wanted::Namespaces,
        Some("--storage-class" | "--from-class" | "--to-class") => Wanted::StorageClasses,
        Some("-f" | "--filename") => Wanted::Files,
        Some("--volume") => match positional.as_slice() {
            ["resize" | "plan", stateful_set, ..] => Wanted::Templates(stateful_set.to_string()),
            _ => Wanted::Nothing,
        },
        Some(flag) if flag.starts_with('-') && takes_value(flag) => Wanted::Nothing,
        _ => match positional.as_slice() {
            [] => Wanted::Commands,
            ["resize" | "plan"] => Wanted::StatefulSets,
            ["describe" | "status" | "watch" | "rollback" | "delete"] => Wanted::VolumeResizes,
            _ => Wanted::Nothing,
        },
    };
    (wanted, typed)
}

fn remember(typed: &mut Typed, flag: &str, value: &str) {
    match flag {
        "-n" | "--namespace" => typed.namespace = Some(value.to_string()),
        "--kubeconfig" => typed.kubeconfig = Some(value.to_string()),
        "--context" => typed.context = Some(value.to_string()),
        _ => {}
    }
}

/// No candidates, and the directive that has the shell complete a file name.
pub fn files_answer() -> String {
    format!(":{FILE_COMPLETION}\n")
}

/// The candidates that start with what is typed, one per line, then the directive.
pub fn answer(candidates: &[String], typed: &str) -> String {
    let mut out: String = candidates
        .iter()
        .filter(|candidate| candidate.starts_with(typed))
        .map(|candidate| format!("{candidate}\n"))
        .collect();
    out.push_str(&format!(":{NO_FILE_COMPLETION}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut words: Vec<String> = text.split(' ').map(str::to_string).collect();
        if text.is_empty() {
            words = vec![String::new()];
        }
        words
    }

    #[test]
    fn the_commands_and_the_flags_with_values_are_the_clis_own() {
        assert!(commands().iter().any(|command| command == "resize"));
        assert!(commands().iter().any(|command| command == "version"));
        for flag in [
            "-n",
            "--namespace",
            "--volume",
            "--size",
            "-o",
            "--interval",
            "--as",
            "--request-timeout",
        ] {
            assert!(takes_value(flag), "{flag}");
        }
        for flag in ["--watch", "--follow", "--yes", "-A", "--force"] {
            assert!(!takes_value(flag), "{flag}");
        }
    }

    #[test]
    fn the_word_typed_decides_what_is_offered() {
        assert_eq!(wanted(&words("")).0, Wanted::Commands);
        assert_eq!(wanted(&words("re")).0, Wanted::Commands);
        assert_eq!(wanted(&words("resize ")).0, Wanted::StatefulSets);
        assert_eq!(wanted(&words("-n prod resize d")).0, Wanted::StatefulSets);
        assert_eq!(
            wanted(&words("resize db --volume ")).0,
            Wanted::Templates("db".into())
        );
        assert_eq!(
            wanted(&words("resize db --storage-class ")).0,
            Wanted::StorageClasses
        );
        for classes in ["migrate --from-class ", "migrate --from-class a --to-class "] {
            assert_eq!(wanted(&words(classes)).0, Wanted::StorageClasses, "{classes}");
        }
        assert_eq!(wanted(&words("migrate -l ")).0, Wanted::Nothing);
        assert_eq!(wanted(&words("status ")).0, Wanted::VolumeResizes);
        assert_eq!(wanted(&words("watch --interval 2 g")).0, Wanted::VolumeResizes);
        assert_eq!(wanted(&words("status grow ")).0, Wanted::Nothing);
        assert_eq!(wanted(&words("resize db --size ")).0, Wanted::Nothing);
        assert_eq!(wanted(&words("list -n ")).0, Wanted::Namespaces);
        assert_eq!(wanted(&words("import -f ")).0, Wanted::Files);
        assert_eq!(wanted(&words("import --filename a.yaml ")).0, Wanted::Nothing);
        assert_eq!(files_answer(), ":0\n");
    }

    #[test]
    fn connection_flags_typed_are_used_to_ask() {
        let (_, typed) = wanted(&words("--context=kind -n prod --kubeconfig /k status "));
        assert_eq!(
            typed,
            Typed {
                namespace: Some("prod".into()),
                kubeconfig: Some("/k".into()),
                context: Some("kind".into()),
            }
        );
    }

    #[test]
    fn candidates_are_filtered_by_the_prefix_and_end_with_the_directive() {
        let names = vec!["db".to_string(), "web".to_string(), "dbx".to_string()];
        assert_eq!(answer(&names, "d"), "db\ndbx\n:4\n");
        assert_eq!(answer(&names, "zzz"), ":4\n");
    }
}
