//! Exit status: what an error means for the shell (see [`super::EXIT_STATUS`]
//! and docs/cli.md).

/// A usage error found after parsing (exit status 2): the command line, the
/// config or the environment it names is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A runtime failure (exit status 1) that carries no error of a known kind.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

/// The exit status for an error (see [`EXIT_STATUS`]): 0 for a closed pipe,
/// 2 for a usage or config error, 1 for a runtime failure.
///
/// The first error of a known kind in the chain decides; a plain message
/// (`bail!`) is a refusal to go on with what was asked, so it is a usage
/// error unless marked [`Failure`].
pub fn exit_code(e: &anyhow::Error) -> u8 {
    use std::io::ErrorKind;
    let pipe = ErrorKind::BrokenPipe;
    if e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == pipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(pipe))
    }) {
        return 0;
    }
    for c in e.chain() {
        let usage = if c.is::<Usage>() {
            Some(true)
        } else if c.is::<Failure>() {
            Some(false)
        } else if c.is::<crate::config::ConfigError>() {
            Some(true)
        } else if let Some(s) = c.downcast_ref::<crate::source::SourceError>() {
            Some(s.is_usage())
        } else if let Some(s) = c.downcast_ref::<crate::export::ServeError>() {
            use crate::export::ServeError as S;
            Some(matches!(s, S::BadAddress { .. } | S::Bind { .. }))
        } else if let Some(r) = c.downcast_ref::<crate::record::RecordError>() {
            use crate::record::RecordError as R;
            Some(match r {
                R::Exists { .. } | R::NotARecording { .. } | R::Version { .. } => true,
                R::Io { error, .. } => names_a_wrong_path(error.kind()),
                _ => false,
            })
        } else if let Some(p) = c.downcast_ref::<crate::fleet::client::PromError>() {
            // A bad URL or credentials are the user's to fix; Prometheus
            // unreachable or failing is a runtime failure.
            Some(matches!(p, crate::fleet::client::PromError::Config(_)))
        } else if let Some(t) = c.downcast_ref::<crate::tui::TuiError>() {
            Some(matches!(t, crate::tui::TuiError::NotATerminal(_)))
        } else if let Some(io) = c.downcast_ref::<std::io::Error>() {
            Some(names_a_wrong_path(io.kind()))
        } else if c.is::<serde_json::Error>() {
            Some(false)
        } else {
            None
        };
        if let Some(usage) = usage {
            return if usage { 2 } else { 1 };
        }
    }
    2
}

/// Whether an I/O error says a path given is wrong (missing, a directory
/// where a file was asked for or the other way round, or already there):
/// the user's to fix, not a failure at run time.
fn names_a_wrong_path(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        kind,
        K::NotFound | K::IsADirectory | K::NotADirectory | K::AlreadyExists
    )
}

/// Ends the process over a command-line error of clap's, printed as every
/// other error is: `vramwatch: error: …` on standard error (clap's usage
/// and tip lines after it), exit status 2. Help and version are not errors:
/// clap prints them to standard output and exits 0.
pub fn exit_on_clap_error(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit();
    }
    let text = crate::sanitize::for_stderr(&clap_text(&e));
    let mut err = std::io::stderr().lock();
    let _ = std::io::Write::write_all(&mut err, text.as_bytes());
    let _ = std::io::Write::flush(&mut err);
    std::process::exit(e.exit_code())
}

/// A clap error's text with vramwatch's prefix on its `error:` line.
fn clap_text(e: &clap::Error) -> String {
    let text = e.render().to_string();
    match text.strip_prefix("error: ") {
        Some(rest) => format!("vramwatch: error: {rest}"),
        None => text,
    }
}

/// The error as one line for the terminal: each cause after the one
/// before, as `{e:#}` writes them, less a cause whose text the message
/// before it already ends with, and less the name a cause begins with
/// when the message before it ends with that name ("replaying x.jsonl:
/// x.jsonl: …"). Several errors quote their source in their own message
/// and chain it too (`analysis::truth::TruthError::Io`,
/// `source::torch::ReadError::Io`, `analysis::hook::HookError::Spawn`:
/// `"{path}: cannot read: {source}"`), which `{e:#}` said twice; they keep
/// the chain, as the exit status is read from it (`exit_code`) and
/// callers printing `{e}` alone want the cause. A system error is said in
/// plain words wherever it is quoted ([`crate::sanitize::os_errors_in_words`]).
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let mut text = c.to_string();
        // "replaying x.jsonl" then "x.jsonl: No such file": the name once.
        let last = out.rsplit(' ').next().unwrap_or("");
        if !last.is_empty()
            && let Some(rest) = text.strip_prefix(last).and_then(|r| r.strip_prefix(": "))
        {
            text = rest.to_owned();
        }
        if out.is_empty() {
            out = text;
        } else if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    // A system error in plain words ("no such file", not "No such file or
    // directory (os error 2)"), wherever it is quoted.
    crate::sanitize::os_errors_in_words(&out)
}

#[cfg(test)]
mod message_tests {
    use super::{clap_text, message};

    #[test]
    fn clap_errors_get_the_prefix_of_every_error() {
        use clap::Parser as _;
        let e = crate::cli::Cli::try_parse_from(["vramwatch", "--bogus"]).unwrap_err();
        let text = clap_text(&e);
        assert!(
            text.starts_with("vramwatch: error: unexpected argument '--bogus' found"),
            "{text}"
        );
        assert!(text.contains("\nUsage: vramwatch"), "{text}");
        assert_eq!(e.exit_code(), 2);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: cannot read: {source}")]
    struct Quoting {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(Quoting {
            path: "x.truth.json".into(),
            source: io,
        })
        .context("scoring x.jsonl.zst");
        assert_eq!(
            message(&e),
            "scoring x.jsonl.zst: x.truth.json: cannot read: No such file"
        );
        // A system error is said in plain words, where it is quoted too.
        let io = std::io::Error::from_raw_os_error(nix::libc::ENOENT);
        let e = anyhow::Error::new(Quoting {
            path: "x.truth.json".into(),
            source: io,
        })
        .context("scoring x.jsonl.zst");
        assert_eq!(
            message(&e),
            "scoring x.jsonl.zst: x.truth.json: cannot read: no such file"
        );
        let io = std::io::Error::from_raw_os_error(nix::libc::EACCES);
        let e = anyhow::Error::new(io).context("creating /x/y.csv");
        assert_eq!(message(&e), "creating /x/y.csv: permission denied");
        // Causes the message does not quote are all kept, as `{:#}` does.
        let e = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(message(&e), format!("{e:#}"));
        assert_eq!(message(&e), "outer: middle: inner");
        // A cause that begins with the name the message ends with.
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(Quoting {
            path: "x.jsonl".into(),
            source: io,
        })
        .context("replaying x.jsonl");
        assert_eq!(message(&e), "replaying x.jsonl: cannot read: No such file");
    }
}
