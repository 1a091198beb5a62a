//! Command lines with their volatile parts replaced, so that the same job
//! run twice reads the same ([`normalise`]), and the program a command
//! runs ([`program`]): the two keys processes are matched by.
//!
//! Replaced, in each whitespace-separated word:
//! - the value of an option whose name contains `port` (`--port 29500`,
//!   `--master_port=29500`) → `<port>`, or `pid` → `<pid>`;
//! - a path in a temporary directory (`/tmp/`, `/var/tmp/`, `/dev/shm/`,
//!   `/run/user/`), up to the next `,` `;` or quote → `<tmp>`; a Python
//!   `tempfile` name (`tmp` + 8 of `[a-z0-9_]`) or `mktemp`'s `tmp.XXXXXXXXXX`
//!   → `<tmp>`;
//! - a UUID → `<uuid>`; a run of 8 or more hex digits with both a digit and a
//!   letter (`3fa9c2d1`, a git hash, a container id) → `<hex>`;
//! - a date (`2026-12-01`, `2026-12-01T01:16:00Z`, `20261201`,
//!   `20261201-011600`) and a unix time in seconds or milliseconds (10 or
//!   13 digits from `1`) → `<time>`;
//! - the process's own PID as a number of its own, a number right after
//!   `pid` (`pid1234`, `pid-1234`, `pid=1234`) → `<pid>`; a port after a host
//!   (`localhost:8080`, `10.0.0.1:29500`) → `<port>`.

/// The command line `cmd` of process `pid` with its volatile parts replaced.
pub(crate) fn normalise(cmd: &str, pid: u32) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<&'static str> = None;
    for word in cmd.split_whitespace() {
        if let Some(ph) = pending.take()
            && all_digits(word)
        {
            out.push(ph.to_owned());
            continue;
        }
        let (head, value) = split_option(word);
        if !head.is_empty() {
            // `--name=value`
            match option_placeholder(head) {
                Some(ph) if all_digits(value) => out.push(format!("{head}{ph}")),
                _ => out.push(format!("{head}{}", scan(value, pid))),
            }
            continue;
        }
        if word.starts_with('-') && !all_digits(&word[1..]) {
            pending = option_placeholder(word);
        }
        out.push(scan(word, pid));
    }
    out.join(" ")
}

/// What a command runs: its program's name (without a version suffix:
/// `python3.12` → `python`) and the script or module it is given (the
/// value of `-m`, else the first argument that is a path or has a dot and
/// is not a number, else the first argument that is neither an option nor
/// a number), without its directory.
pub(crate) fn program(cmd: &str) -> String {
    let mut words = cmd.split_whitespace();
    let Some(exe) = words.next() else {
        return "?".to_owned();
    };
    let exe = basename(exe).trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let mut fallback = None;
    let mut script = None;
    while let Some(w) = words.next() {
        if w == "-m" {
            script = words.next();
            break;
        }
        if w.starts_with('-') || w.parse::<f64>().is_ok() {
            continue;
        }
        if w.contains('/') || w.contains('.') {
            script = Some(w);
            break;
        }
        fallback = fallback.or(Some(w));
    }
    match script.or(fallback) {
        Some(s) => format!("{exe} {}", basename(s)),
        None => exe.to_owned(),
    }
}

fn basename(w: &str) -> &str {
    w.rsplit('/').find(|s| !s.is_empty()).unwrap_or(w)
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `--name=value` → (`--name=`, `value`); otherwise (``, word).
fn split_option(word: &str) -> (&str, &str) {
    if word.starts_with('-')
        && let Some(eq) = word.find('=')
    {
        let name = &word[..eq];
        if name.len() > 1
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return word.split_at(eq + 1);
        }
    }
    ("", word)
}

/// The placeholder for the value of an option named so.
fn option_placeholder(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    if n.contains("port") {
        Some("<port>")
    } else if n.contains("pid") {
        Some("<pid>")
    } else {
        None
    }
}

const TEMP_DIRS: [&str; 4] = ["/tmp/", "/var/tmp/", "/dev/shm/", "/run/user/"];

/// One word (or an option's value) with its volatile parts replaced.
fn scan(s: &str, pid: u32) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let prev = i.checked_sub(1).map(|j| b[j]);
        let alnum_edge = prev.is_none_or(|p| !p.is_ascii_alphanumeric());
        let found = temp_path(s, i, prev)
            .or_else(|| alnum_edge.then(|| temp_name(&b[i..])).flatten())
            .or_else(|| alnum_edge.then(|| uuid(&b[i..])).flatten())
            .or_else(|| {
                prev.is_none_or(|p| !p.is_ascii_digit())
                    .then(|| date(&b[i..]))
                    .flatten()
            })
            .or_else(|| alnum_edge.then(|| hex_id(&b[i..])).flatten())
            .or_else(|| number(b, i, pid));
        if let Some((len, rep)) = found {
            out.push_str(rep);
            i += len;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8().max(1);
    }
    out
}

fn temp_path(s: &str, i: usize, prev: Option<u8>) -> Option<(usize, &'static str)> {
    if !prev.is_none_or(|p| b"=:,;'\"@(".contains(&p)) {
        return None;
    }
    let rest = &s[i..];
    let whole = rest == "/tmp" || rest.starts_with("/tmp,") || rest.starts_with("/tmp;");
    if !whole && !TEMP_DIRS.iter().any(|d| rest.starts_with(d)) {
        return None;
    }
    let len = rest
        .bytes()
        .position(|c| b",;'\")".contains(&c))
        .unwrap_or(rest.len());
    Some((len, "<tmp>"))
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Python's `tempfile` names (`tmp` + 8 of `[a-z0-9_]`, at least one
/// digit or `_`) and `mktemp`'s (`tmp.` + 10 letters or digits).
fn temp_name(b: &[u8]) -> Option<(usize, &'static str)> {
    if !b.starts_with(b"tmp") {
        return None;
    }
    let py = b.get(3..11).filter(|r| {
        r.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
            && r.iter().any(|&c| c.is_ascii_digit() || c == b'_')
    });
    if py.is_some() && !b.get(11).is_some_and(|&c| is_word(c)) {
        return Some((11, "<tmp>"));
    }
    let mk = b.get(3) == Some(&b'.')
        && b.get(4..14)
            .is_some_and(|r| r.iter().all(u8::is_ascii_alphanumeric))
        && !b.get(14).is_some_and(|&c| is_word(c));
    mk.then_some((14, "<tmp>"))
}

fn uuid(b: &[u8]) -> Option<(usize, &'static str)> {
    let groups = [8, 4, 4, 4, 12];
    let mut i = 0;
    for (n, &g) in groups.iter().enumerate() {
        if n > 0 {
            if b.get(i) != Some(&b'-') {
                return None;
            }
            i += 1;
        }
        if !b.get(i..i + g)?.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        i += g;
    }
    (!b.get(i).is_some_and(|c| c.is_ascii_alphanumeric())).then_some((i, "<uuid>"))
}

fn hex_id(b: &[u8]) -> Option<(usize, &'static str)> {
    let len = b.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    let run = &b[..len];
    let ok = len >= 8
        && !b.get(len).is_some_and(|c| c.is_ascii_alphanumeric())
        && run.iter().any(u8::is_ascii_digit)
        && run.iter().any(u8::is_ascii_alphabetic);
    ok.then_some((len, "<hex>"))
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let r = b.get(at..at + n)?;
    r.iter()
        .all(u8::is_ascii_digit)
        .then(|| r.iter().fold(0u32, |v, &c| v * 10 + u32::from(c - b'0')))
}

/// A date, with a time of day if one follows: `YYYY-MM-DD[( |T|_|-)HH[:-]MM([:-]SS)[.f]][Z]`,
/// or `YYYYMMDD[(T|_|-)HHMMSS]`.
fn date(b: &[u8]) -> Option<(usize, &'static str)> {
    let valid = |y: u32, m: u32, d: u32| {
        (1970..2100).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d)
    };
    let (mut i, dashed) = match (digits(b, 0, 4), b.get(4)) {
        (Some(y), Some(b'-'))
            if valid(y, digits(b, 5, 2)?, digits(b, 8, 2)?) && b.get(7) == Some(&b'-') =>
        {
            (10, true)
        }
        (Some(y), _) if valid(y, digits(b, 4, 2)?, digits(b, 6, 2)?) => (8, false),
        _ => return None,
    };
    let sep = |c: Option<&u8>| matches!(c, Some(b'T' | b'_' | b'-' | b' '));
    if sep(b.get(i)) && digits(b, i + 1, 2).is_some() {
        let mut j = i + 3;
        if dashed {
            if matches!(b.get(j), Some(b':' | b'-')) && digits(b, j + 1, 2).is_some() {
                j += 3;
                if matches!(b.get(j), Some(b':' | b'-')) && digits(b, j + 1, 2).is_some() {
                    j += 3;
                }
                i = j;
            }
        } else if digits(b, i + 1, 6).is_some() {
            i += 7;
        }
        if b.get(i) == Some(&b'.') {
            i += 1 + b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
        if b.get(i) == Some(&b'Z') {
            i += 1;
        }
    }
    (!b.get(i).is_some_and(u8::is_ascii_digit)).then_some((i, "<time>"))
}

/// A run of digits starting at `i` (not inside a longer run): the PID,
/// a number after `pid`, a unix time, a port after a host.
fn number(b: &[u8], i: usize, pid: u32) -> Option<(usize, &'static str)> {
    if !b[i].is_ascii_digit() || i.checked_sub(1).is_some_and(|j| b[j].is_ascii_digit()) {
        return None;
    }
    let len = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let run = &b[i..i + len];
    let before = &b[..i];
    let after_alnum = b.get(i + len).is_some_and(u8::is_ascii_alphanumeric);
    let before_alnum = before.last().is_some_and(u8::is_ascii_alphanumeric);
    let lower: Vec<u8> = before
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(u8::to_ascii_lowercase)
        .collect();
    let after_pid = lower.ends_with(b"pid")
        || (lower.len() == 4 && lower.starts_with(b"pid") && b"-_=.:".contains(&lower[3]));
    let value: Option<u64> = std::str::from_utf8(run).ok().and_then(|s| s.parse().ok());
    if after_pid || (pid > 1 && value == Some(u64::from(pid)) && !before_alnum && !after_alnum) {
        return Some((len, "<pid>"));
    }
    if (len == 10 || len == 13) && run[0] == b'1' {
        return Some((len, "<time>"));
    }
    let host = before.strip_suffix(b":").is_some_and(|h| {
        let start = h
            .iter()
            .rposition(|c| !(c.is_ascii_alphanumeric() || b".-[]".contains(c)))
            .map_or(0, |p| p + 1);
        let h = &h[start..];
        // A name or an address, not a number (`4096:8192`, `1:2`).
        h.iter().any(|c| c.is_ascii_alphabetic() || *c == b'.')
    });
    if host && (2..=5).contains(&len) && !after_alnum && b.get(i + len) != Some(&b':') {
        return Some((len, "<port>"));
    }
    // Not volatile: keep the whole run (no match starts inside it).
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_parts_are_replaced() {
        let n = |c: &str| normalise(c, 4242);
        assert_eq!(
            n("python train.py --port 29500"),
            "python train.py --port <port>"
        );
        assert_eq!(
            n("torchrun --master_port=29511 t.py"),
            "torchrun --master_port=<port> t.py"
        );
        assert_eq!(
            n("srv --bind localhost:8080 --peer 10.0.0.1:29500/x"),
            "srv --bind localhost:<port> --peer 10.0.0.1:<port>/x"
        );
        assert_eq!(
            n("x --parent-pid 1234 --log w-4242.log"),
            "x --parent-pid <pid> --log w-<pid>.log"
        );
        assert_eq!(
            n("x --out /proc/4242/fd pid1234 PID-77"),
            "x --out /proc/<pid>/fd pid<pid> PID-<pid>"
        );
        assert_eq!(
            n("x --truth /tmp/c/tune/a.json,b --cache=/dev/shm/q"),
            "x --truth <tmp>,b --cache=<tmp>"
        );
        assert_eq!(
            n("x /home/u/tmp/keep /home/u/tmpab3k_9z2/f tmp.Ab3De6Gh9J"),
            "x /home/u/tmp/keep /home/u/<tmp>/f <tmp>"
        );
        assert_eq!(
            n("x --run run-2026-12-01T01:16:00Z --tag 20261201-011600 --t 1796085944"),
            "x --run run-<time> --tag <time> --t <time>"
        );
        assert_eq!(
            n("x --ms 1796085944986 --day 2026-12-01"),
            "x --ms <time> --day <time>"
        );
        assert_eq!(
            n(
                "x --id 3fa9c2d1 --sha 05211c5aa9 --c 7f3c2a91d0be --u 123e4567-e89b-12d3-a456-426614174000"
            ),
            "x --id <hex> --sha <hex> --c <hex> --u <uuid>"
        );
    }

    #[test]
    fn stable_parts_are_kept() {
        let n = |c: &str| normalise(c, 7);
        for c in [
            "python3 train.py --epochs 10 --lr 0.0003 --batch-size 64",
            "python3 -m torch.distributed.run --nproc_per_node 8 train.py",
            "x --steps 10000000 --name deadbeef --dim 4096:8192",
            "python3.12 /home/u/tmp/run.py --seed 1234",
            "x cuda:0 --gpus 0,1 --ratio 1:2 --ver 1.2.3",
            "x ünïcödé 12345678 --date-like 99999999",
        ] {
            assert_eq!(
                n(c),
                c.split_whitespace().collect::<Vec<_>>().join(" "),
                "{c}"
            );
        }
        // Small PIDs are not replaced inside words.
        assert_eq!(normalise("python3 a.py --k 3", 3), "python3 a.py --k <pid>");
        assert_eq!(normalise("python3 a.py", 3), "python3 a.py");
    }

    #[test]
    fn the_program_is_the_interpreter_and_its_script() {
        assert_eq!(
            program("python3 /work/main/python/workloads/healthy_train.py --device 0"),
            "python healthy_train.py"
        );
        assert_eq!(
            program("/usr/bin/python3.12 -u train.py --lr 0.1"),
            "python train.py"
        );
        assert_eq!(
            program("python -m vllm.entrypoints.api_server --port 1"),
            "python vllm.entrypoints.api_server"
        );
        assert_eq!(
            program("torchrun --nproc_per_node 8 train.py"),
            "torchrun train.py"
        );
        assert_eq!(program("./bin/server serve --fast"), "server serve");
        assert_eq!(program("ollama"), "ollama");
        assert_eq!(program(""), "?");
    }
}
