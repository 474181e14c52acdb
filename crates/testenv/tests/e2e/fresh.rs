//! Cargo freshness by content (`scripts/lib/fresh_mtimes.py`, docs/testenv.md "CI and its caches"),
//! with real git and real cargo, on a small workspace shaped like Ferry's (`api` ← `engine` ←
//! `operator`, and `mover` apart), built into a target dir of its own so the shared one is never
//! touched: a new clone of unchanged code builds nothing, and every change — a line in any crate,
//! going back to an older content, a build made without the tool, a new file not yet committed — is
//! built, proven by running the binaries; and every clone builds from the same tree beside the
//! target dir (what lets rustc reuse its incremental caches), which loses the files a clone lacks.

use std::path::{Path, PathBuf};
use std::process::Command;

const CRATES: [&str; 4] = ["api", "engine", "operator", "mover"];

fn tool() -> PathBuf {
    ferry_testenv::paths::repo_root().join("scripts/lib/fresh_mtimes.py")
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `api::value()` returns `api`; `engine::value()` adds `engine`; the operator prints their sum
/// plus `operator`; the mover prints `mover`.
fn set_values(dir: &Path, api: u32, engine: u32, operator: u32, mover: u32) {
    write(
        dir,
        "api/src/lib.rs",
        &format!("pub fn value() -> u32 {{\n    {api}\n}}\n"),
    );
    write(
        dir,
        "engine/src/lib.rs",
        &format!("pub fn value() -> u32 {{\n    api::value() + {engine}\n}}\n"),
    );
    write(
        dir,
        "operator/src/main.rs",
        &format!("fn main() {{\n    println!(\"{{}}\", engine::value() + {operator});\n}}\n"),
    );
    write(
        dir,
        "mover/src/main.rs",
        &format!("fn main() {{\n    println!(\"{mover}\");\n}}\n"),
    );
}

fn manifest(name: &str, dependency: Option<&str>) -> String {
    let dependency = dependency.map_or(String::new(), |d| format!("{d} = {{ path = \"../{d}\" }}\n"));
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{dependency}"
    )
}

/// The origin repository: the workspace committed with values 1, 2, 3, 4.
fn make_origin(dir: &Path) {
    write(
        dir,
        "Cargo.toml",
        "[workspace]\nresolver = \"3\"\nmembers = [\"api\", \"engine\", \"operator\", \"mover\"]\n",
    );
    write(dir, "api/Cargo.toml", &manifest("api", None));
    write(dir, "engine/Cargo.toml", &manifest("engine", Some("api")));
    write(dir, "operator/Cargo.toml", &manifest("operator", Some("engine")));
    write(dir, "mover/Cargo.toml", &manifest("mover", None));
    set_values(dir, 1, 2, 3, 4);
    run(dir, "git", &["init", "-q"]);
    run(dir, "git", &["add", "-A"]);
    run(
        dir,
        "git",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "origin",
        ],
    );
    // Cargo writes the lock file at the first build; committed, a clone has it unchanged.
    run(dir, "cargo", &["generate-lockfile", "--offline"]);
    run(dir, "git", &["add", "Cargo.lock"]);
    run(
        dir,
        "git",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "lock",
        ],
    );
}

struct Bed {
    _root: tempfile::TempDir,
    origin: PathBuf,
    target: PathBuf,
    clones: u32,
    root: PathBuf,
}

impl Bed {
    fn new() -> Bed {
        let root = tempfile::tempdir().unwrap();
        let origin = root.path().join("origin");
        make_origin(&origin);
        Bed {
            origin,
            target: root.path().join("target"),
            clones: 0,
            root: root.path().to_path_buf(),
            _root: root,
        }
    }

    /// A fresh clone of the origin, as CI makes one: every file with a new mtime.
    fn new_clone(&mut self) -> PathBuf {
        self.clones += 1;
        let dir = self.root.join(format!("clone-{}", self.clones));
        run(
            &self.root,
            "git",
            &[
                "clone",
                "-q",
                self.origin.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
        dir
    }

    /// Builds the workspace through the tool; returns the crates cargo compiled (not fresh).
    fn build(&self, checkout: &Path) -> Vec<String> {
        let out = Command::new("python3")
            .args([
                "-B",
                tool().to_str().unwrap(),
                "cargo",
                "build",
                "--offline",
                "--workspace",
                "--message-format=json",
            ])
            .current_dir(checkout)
            .env("CARGO_TARGET_DIR", &self.target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let message: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(manifest) = message["manifest_path"].as_str() {
                assert!(
                    Path::new(manifest).starts_with(self.tree()),
                    "{manifest} is not in the build tree {}",
                    self.tree().display()
                );
            }
        }
        compiled(&out.stdout)
    }

    /// Where the tool builds every checkout from.
    fn tree(&self) -> PathBuf {
        self.root.join("target-src")
    }

    /// Builds through the tool and checks that cargo compiled exactly `expected` (none: fresh).
    fn assert_builds(&self, checkout: &Path, expected: &[&str], why: &str) {
        assert_eq!(self.build(checkout), sorted(expected), "{why}");
    }

    /// Builds without the tool (as a bare `cargo build` on the shared dir would).
    fn build_bare(&self, checkout: &Path) {
        let out = Command::new("cargo")
            .args(["build", "--offline", "--workspace", "--quiet"])
            .current_dir(checkout)
            .env("CARGO_TARGET_DIR", &self.target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// What the built operator and mover print.
    fn outputs(&self) -> (String, String) {
        let binary = |name: &str| {
            run(
                &self.root,
                self.target.join("debug").join(name).to_str().unwrap(),
                &[],
            )
        };
        (
            binary("operator").trim().to_string(),
            binary("mover").trim().to_string(),
        )
    }
}

fn compiled(messages: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = String::from_utf8_lossy(messages)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
        .filter_map(|m| m["target"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    names.sort();
    names
}

#[test]
fn a_new_clone_of_unchanged_code_builds_nothing_and_every_change_is_built() {
    let mut bed = Bed::new();
    let first = bed.new_clone();
    bed.assert_builds(&first, &CRATES, "the first build compiles everything");
    assert_eq!(bed.outputs(), ("6".into(), "4".into()));

    let unchanged = bed.new_clone();
    bed.assert_builds(&unchanged, &[], "a new clone of the same code is fresh");

    // A one-line change in each crate rebuilds that crate and what depends on it, nothing else.
    let changed = bed.new_clone();
    // (crate changed, the four values after it, what cargo compiles, what operator and mover print)
    let steps = [
        (
            "api",
            [10, 2, 3, 4],
            &["api", "engine", "operator"][..],
            ["15", "4"],
        ),
        ("engine", [10, 20, 3, 4], &["engine", "operator"][..], ["33", "4"]),
        ("operator", [10, 20, 30, 4], &["operator"][..], ["60", "4"]),
        ("mover", [10, 20, 30, 40], &["mover"][..], ["60", "40"]),
    ];
    for (name, [a, e, o, m], rebuilt, outputs) in steps {
        set_values(&changed, a, e, o, m);
        bed.assert_builds(&changed, rebuilt, &format!("a one-line change in {name}"));
        assert_eq!(
            bed.outputs(),
            (outputs[0].into(), outputs[1].into()),
            "after the change in {name}"
        );
        bed.assert_builds(&changed, &[], &format!("built once after the change in {name}"));
    }

    // A new clone of the origin is the old content again: a change too, so it is built.
    let back = bed.new_clone();
    bed.assert_builds(&back, &CRATES, "going back to the committed content");
    assert_eq!(bed.outputs(), ("6".into(), "4".into()));
    let again = bed.new_clone();
    bed.assert_builds(&again, &[], "and a clone after that is fresh");

    // A build the tool did not see (engine changed) must not make the next clone's engine fresh.
    let outside = bed.new_clone();
    set_values(&outside, 1, 7, 3, 4);
    bed.build_bare(&outside);
    assert_eq!(bed.outputs(), ("11".into(), "4".into()));
    let after_outside = bed.new_clone();
    let rebuilt = bed.build(&after_outside);
    assert!(
        ["engine", "operator"]
            .iter()
            .all(|c| rebuilt.contains(&c.to_string())),
        "after a build outside the tool: {rebuilt:?}"
    );
    assert_eq!(bed.outputs(), ("6".into(), "4".into()));
    let trusted = bed.new_clone();
    bed.assert_builds(&trusted, &[], "trusted again after that rebuild");

    // A new file not yet committed is built; a clone without it builds without it.
    let uncommitted = bed.new_clone();
    write(&uncommitted, "mover/src/extra.rs", "pub const VALUE: u32 = 77;\n");
    write(
        &uncommitted,
        "mover/src/main.rs",
        "mod extra;\nfn main() {\n    println!(\"{}\", extra::VALUE);\n}\n",
    );
    bed.assert_builds(&uncommitted, &["mover"], "a new, uncommitted file");
    assert_eq!(bed.outputs(), ("6".into(), "77".into()));
    let without = bed.new_clone();
    bed.assert_builds(&without, &["mover"], "the clone without the new file");
    assert_eq!(bed.outputs(), ("6".into(), "4".into()));
    assert!(
        !bed.tree().join("mover/src/extra.rs").exists(),
        "a file the checkout lacks is gone from the build tree"
    );
}
