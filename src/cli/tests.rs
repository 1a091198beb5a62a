use super::*;

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("vramwatch").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn refused(args: &[&str]) -> String {
    Cli::try_parse_from(std::iter::once("vramwatch").chain(args.iter().copied()))
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

#[test]
fn the_cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn demo_takes_an_optional_scenario_but_never_a_subcommand() {
    let c = parse(&["--demo"]);
    assert_eq!(c.dashboard().demo.as_deref(), Some("demo"));
    let c = parse(&["--demo", "leak"]);
    assert_eq!(c.dashboard().demo.as_deref(), Some("leak"));
    let c = parse(&["--demo=crowded", "--seed", "7"]);
    let s = c.dashboard();
    assert_eq!((s.demo.as_deref(), s.seed), (Some("crowded"), 7));
    // A subcommand after a bare --demo is the subcommand.
    let c = parse(&["--demo", "snapshot"]);
    let Some(Command::Snapshot(a)) = &c.command else {
        panic!("{c:?}")
    };
    let s = c.source_for(Some(&a.demo), None, Some(&a.gpus), Some(&a.config));
    assert_eq!(s.demo.as_deref(), Some("demo"));
    assert!(c.misplaced().is_none());
    let c = parse(&["snapshot", "--demo", "--json"]);
    assert!(
        matches!(&c.command, Some(Command::Snapshot(a)) if a.json && a.demo.demo.as_deref() == Some("demo"))
    );
    let c = parse(&["snapshot", "--demo", "training"]);
    assert!(
        matches!(&c.command, Some(Command::Snapshot(a)) if a.demo.demo.as_deref() == Some("training"))
    );
    let c = parse(&[]);
    assert!(c.dashboard().demo.is_none() && c.command.is_none());
    assert_eq!(c.dashboard().seed, 1);
    let e = refused(&["--demo", "nosuch"]);
    assert!(e.contains("nosuch") && e.contains("crowded"), "{e}");
    let e = refused(&["--seed", "3"]);
    assert!(e.contains("--demo"), "{e}");
}

#[test]
fn the_subcommands_own_options_win() {
    let c = parse(&[
        "--demo=leak",
        "--config",
        "a.toml",
        "record",
        "--demo",
        "idle",
        "--interval",
        "2s",
        "-o",
        "x.jsonl",
    ]);
    let Some(Command::Record(a)) = &c.command else {
        panic!()
    };
    let s = c.source_for(
        Some(&a.demo),
        Some(&a.interval),
        Some(&a.gpus),
        Some(&a.config),
    );
    assert_eq!(s.demo.as_deref(), Some("idle"));
    assert_eq!(s.interval, Some(Duration::from_secs(2)));
    assert_eq!(s.config, Some(PathBuf::from("a.toml")));
    assert_eq!(s.gpus, Selection::Auto);
}

#[test]
fn options_are_offered_only_where_they_act() {
    for args in [
        &["export", "f.jsonl", "--csv", "--demo"][..],
        &["report", "f.jsonl", "--interval", "1s"],
        &["replay", "f.jsonl", "--seed", "2"],
        &["score", "f.jsonl", "--demo"],
        &["config", "check", "--interval", "1s"],
        &["export", "f.jsonl", "--csv", "--config", "c.toml"],
        &["snapshot", "--interval", "1s"],
        &["bench-sampler", "--gpu", "0"],
    ] {
        let e = refused(args);
        assert!(e.contains("unexpected argument"), "{args:?}: {e}");
    }
    // Given before the subcommand, they are refused too.
    for (args, flag) in [
        (&["--demo", "export", "f.jsonl", "--csv"][..], "--demo"),
        (&["--interval", "1s", "snapshot"], "--interval"),
        (&["--gpu", "0", "report", "f"], "--gpu"),
        (&["--config", "c.toml", "completions", "bash"], "--config"),
        (&["--read-only", "replay", "f"], "--read-only"),
        (&["--color", "16", "snapshot"], "--color"),
    ] {
        let c = parse(args);
        let e = c.misplaced().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains(&format!("`{flag}` does nothing")),
            "{args:?}: {e}"
        );
    }
    for args in [
        &["--config", "c.toml", "report", "f"][..],
        &["--color", "16", "replay", "f"],
        &["--gpu", "1", "--interval", "2s", "serve"],
        &["--config", "c.toml", "config", "check"],
    ] {
        assert!(parse(args).misplaced().is_none(), "{args:?}");
    }
}

#[test]
fn a_record_duration_is_bounded() {
    assert_eq!(parse_duration("8h"), Ok(Duration::from_secs(8 * 3600)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    // Any longer overflowed the clock's arithmetic and panicked.
    for bad in [
        "0s",
        "50ms",
        "367d",
        "18446744073709551615s",
        "300000000000years",
    ] {
        let e = parse_duration(bad).unwrap_err();
        assert!(
            e.contains("from 100ms to 366d") || e.contains("too large"),
            "{bad}: {e}"
        );
    }
    assert!(
        parse_duration("soon")
            .unwrap_err()
            .contains("not a duration")
    );
    assert!(
        refused(&["record", "-o", "x.jsonl", "--duration", "99999999999999d"])
            .contains("--duration")
    );
}

#[test]
fn intervals_share_the_configs_limits() {
    assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
    assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_interval("1m"), Ok(Duration::from_secs(60)));
    for bad in ["50ms", "99999h", "2years", "61s"] {
        let e = parse_interval(bad).unwrap_err();
        assert_eq!(
            e, "must be between 100ms and 1m, as [sampling] interval",
            "{bad}"
        );
    }
    assert!(
        parse_interval("soon")
            .unwrap_err()
            .contains("not a duration")
    );
    let c = parse(&["snapshot", "--watch"]);
    assert!(matches!(&c.command, Some(Command::Snapshot(a)) if a.watch == Some(None)));
    let c = parse(&["snapshot", "-w", "2s", "--json"]);
    assert!(
        matches!(&c.command, Some(Command::Snapshot(a)) if a.watch == Some(Some(Duration::from_secs(2))))
    );
    assert!(refused(&["snapshot", "--watch", "10ms"]).contains("between 100ms and 1m"));
}

#[test]
fn listen_addresses_are_checked_as_the_config_does() {
    assert_eq!(parse_listen("127.0.0.1:9400"), Ok("127.0.0.1:9400".into()));
    assert_eq!(parse_listen(" [::1]:0"), Ok("[::1]:0".into()));
    let e = parse_listen("localhost:9999").unwrap_err();
    assert!(
        e.starts_with("`localhost:9999` is not a listen address: `localhost` is not an IP address"),
        "{e}"
    );
    let e = refused(&["serve", "--listen", "localhost"]);
    assert!(e.contains("--listen") && e.contains("`localhost` is not a listen address"));
    let e = refused(&["--serve", "0.0.0.0"]);
    assert!(e.contains("it has no port"), "{e}");
}

#[test]
fn gpu_choices() {
    let c = parse(&["snapshot", "--gpu", "1,GPU-ab"]);
    let Some(Command::Snapshot(a)) = &c.command else {
        panic!()
    };
    let s = c.source_for(Some(&a.demo), None, Some(&a.gpus), None);
    assert_eq!(s.gpus, Selection::List(GpuList::parse("1,GPU-ab").unwrap()));
    let c = parse(&["--all-gpus"]);
    assert_eq!(c.dashboard().gpus, Selection::All);
    assert!(refused(&["--gpu", "0", "--all-gpus"]).contains("cannot be used with"));
    assert!(refused(&["--gpu", "zero"]).contains("`zero` is not a GPU index"));
}

#[test]
fn exit_codes() {
    use anyhow::{Context, anyhow};
    let io = |k| anyhow::Error::new(std::io::Error::from(k));
    assert_eq!(
        exit_code(&io(std::io::ErrorKind::BrokenPipe).context("x")),
        0
    );
    assert_eq!(exit_code(&io(std::io::ErrorKind::PermissionDenied)), 1);
    assert_eq!(exit_code(&io(std::io::ErrorKind::NotFound)), 2);
    assert_eq!(exit_code(&anyhow!("a refusal")), 2);
    assert_eq!(exit_code(&anyhow!(Failure("lost".into())).context("x")), 1);
    assert_eq!(exit_code(&anyhow!(Usage("bad".into()))), 2);
    let src = |e| anyhow::Error::new(e).context("opening");
    assert_eq!(exit_code(&src(crate::source::SourceError::NoGpu)), 1);
    assert_eq!(
        exit_code(&src(crate::source::SourceError::Selection("x".into()))),
        2
    );
    let rec = |e| anyhow::Error::new(e).context("reading");
    use crate::record::RecordError as R;
    assert_eq!(exit_code(&rec(R::Exists { path: "p".into() })), 2);
    assert_eq!(
        exit_code(&rec(R::Corrupt {
            path: "p".into(),
            offset: 3,
            why: "x".into()
        })),
        1
    );
    let cfg = crate::config::parse("[x", "c.toml").unwrap_err();
    assert_eq!(exit_code(&anyhow::Error::new(cfg).context("loading")), 2);
    // A context over a known kind: the kind decides.
    let e: anyhow::Result<()> = Err(std::io::Error::other("disk")).context("writing out.csv");
    assert_eq!(exit_code(&e.unwrap_err()), 1);
}

#[test]
fn completions_and_man_pages() {
    let mut bash = Vec::new();
    write_completions(clap_complete::Shell::Bash, &mut bash).unwrap();
    let bash = String::from_utf8(bash).unwrap();
    assert!(bash.contains("_vramwatch()") && bash.contains("--demo"));
    let mut man = Vec::new();
    write_man(None, &mut man).unwrap();
    let man = String::from_utf8(man).unwrap();
    assert!(man.starts_with(".ie \\n(.g .ds Aq") || man.contains(".TH vramwatch 1"));
    assert!(man.contains("vramwatch\\-snapshot(1)") && man.contains("Exit status"));
    let mut sub = Vec::new();
    write_man(Some("snapshot"), &mut sub).unwrap();
    assert!(
        String::from_utf8(sub)
            .unwrap()
            .contains(".TH vramwatch-snapshot 1")
    );
    assert!(write_man(Some("bench-sampler"), &mut Vec::new()).is_err());
}
