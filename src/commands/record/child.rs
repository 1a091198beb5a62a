//! The command `record -- COMMAND` runs: starting it, signalling it, and
//! its exit status as a shell gives it.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::Instant;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The exit status when the command is not found, as a shell gives it.
pub(super) const NOT_FOUND: u8 = 127;
/// The exit status when the command was found but cannot be run (not
/// executable, not a program, a directory), as a shell gives it.
pub(super) const CANNOT_RUN: u8 = 126;

/// The running command. It shares vramwatch's standard input, output and
/// error, and its process group (so a Ctrl-C at the terminal reaches both).
pub(super) struct Job {
    child: Child,
    /// The command line, quoted as a shell would take it.
    pub(super) shown: String,
    pub(super) started: Instant,
}

/// Why the command could not be started, and the exit status that says so.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) code: u8,
    pub(super) message: String,
}

impl Job {
    pub(super) fn spawn(argv: &[OsString]) -> Result<Job, Refused> {
        let Some((program, args)) = argv.split_first() else {
            return Err(Refused {
                code: CANNOT_RUN,
                message: "no command given after `--`".into(),
            });
        };
        match Command::new(program).args(args).spawn() {
            Ok(child) => Ok(Job {
                child,
                shown: shell_words(argv),
                started: Instant::now(),
            }),
            Err(e) => Err(refused(Path::new(program), &e)),
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `sig` to the command (not yet reaped, so its PID is still its
    /// own).
    pub(super) fn signal(&self, sig: Signal) -> nix::Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), sig)
    }

    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Kills the command and waits for it: for when vramwatch lost track
    /// of it.
    pub(super) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether a Ctrl-C at the terminal has reached the command already:
    /// its process group is the terminal's foreground group. A SIGINT
    /// vramwatch receives is passed on only when it has not.
    pub(super) fn in_foreground(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .ok()
            .and_then(|s| groups(&s))
            .is_some_and(|(pgrp, tpgid)| tpgid > 0 && pgrp == tpgid)
    }
}

/// The process group and the terminal's foreground process group from a
/// `/proc/PID/stat` line: fields 5 and 8, after the command in parentheses
/// (which may hold spaces and parentheses itself).
fn groups(stat: &str) -> Option<(i64, i64)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // state ppid pgrp session tty_nr tpgid
    Some((f.get(2)?.parse().ok()?, f.get(5)?.parse().ok()?))
}

/// A failed start as a shell reports it: 127 when there is no such
/// program, 126 when there is one that cannot be run.
fn refused(program: &Path, e: &io::Error) -> Refused {
    let name = program.display();
    if e.kind() == io::ErrorKind::NotFound {
        // A file that exists was not found: its interpreter (`#!`) is missing.
        if program.components().count() > 1 && program.exists() {
            return Refused {
                code: CANNOT_RUN,
                message: format!(
                    "cannot run `{name}`: its interpreter (the `#!` line) was not found"
                ),
            };
        }
        let message = if program.components().count() > 1 {
            format!("cannot run `{name}`: no such file")
        } else {
            format!("cannot run `{name}`: command not found (not in PATH)")
        };
        return Refused {
            code: NOT_FOUND,
            message,
        };
    }
    let hint = if e.kind() == io::ErrorKind::PermissionDenied {
        " (is it an executable file?)"
    } else {
        ""
    };
    Refused {
        code: CANNOT_RUN,
        message: format!("cannot run `{name}`: {e}{hint}"),
    }
}

/// The exit status a shell gives for the command's: its exit code, or
/// 128 + N when it was killed by signal N.
pub(super) fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => 1,
    }
}

/// "exited with code 3", "was killed by signal 9 (SIGKILL)".
pub(super) fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("was killed by signal {sig} ({})", s.as_str()),
            Err(_) => format!("was killed by signal {sig}"),
        },
        (None, None) => format!("ended ({status})"),
    }
}

/// The command line as a shell would take it back: words quoted only
/// where they need it.
pub(super) fn shell_words(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_those_a_shell_gives() {
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(255 << 8)), 255);
        // Killed by SIGKILL (9), SIGTERM (15).
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
        assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "exited with code 3");
        assert_eq!(
            describe(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn the_command_line_is_quoted_only_where_needed() {
        let argv: Vec<OsString> = ["python", "train.py", "--steps=200", "it's", "", "a b"]
            .into_iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            shell_words(&argv),
            r"python train.py --steps=200 'it'\''s' '' 'a b'"
        );
    }

    #[test]
    fn groups_are_read_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 34816 4242 4194304 0 0";
        assert_eq!(groups(stat), Some((4242, 4242)));
        let detached = "7 (sh) S 1 7 7 0 -1 4194304";
        assert_eq!(groups(detached), Some((7, -1)));
        assert_eq!(groups("garbage"), None);
    }

    #[test]
    fn a_failed_start_says_why_with_a_shell_status() {
        let gone = io::Error::from(io::ErrorKind::NotFound);
        let r = refused(Path::new("no-such-cmd"), &gone);
        assert_eq!(r.code, NOT_FOUND);
        assert_eq!(
            r.message,
            "cannot run `no-such-cmd`: command not found (not in PATH)"
        );
        let r = refused(Path::new("/no/such/file"), &gone);
        assert_eq!(
            (r.code, r.message.as_str()),
            (NOT_FOUND, "cannot run `/no/such/file`: no such file")
        );
        let denied = io::Error::from_raw_os_error(13);
        let r = refused(Path::new("./x"), &denied);
        assert_eq!(r.code, CANNOT_RUN);
        assert!(
            r.message.starts_with("cannot run `./x`: Permission denied"),
            "{}",
            r.message
        );
    }
}
