//! Commands as a narrow column shows them: short, and keeping the part
//! that tells one process from another. The interpreter's path becomes its
//! basename and its own flags go (`/opt/torch/.venv/bin/python3 -B` →
//! `python3`), the script's path its name; `-c` and `-m` keep their
//! payload; a beginning shared with another listed process is elided
//! (`python worker.py … 12`) when the whole does not fit. The table, the
//! GPU view and the SVG report share it.

/// A command split into words, with the words that name what runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Words {
    pub words: Vec<String>,
    /// How many leading words name the program: the program, and for an
    /// interpreter its script, `-m module` or `-c`.
    pub head: usize,
}

/// Python's own flags that take no value.
const PY_FLAGS: &[&str] = &[
    "-b", "-bb", "-B", "-d", "-E", "-i", "-I", "-O", "-OO", "-P", "-q", "-R", "-s", "-S", "-u",
    "-v", "-x",
];
/// Python's own flags that take the next word as their value.
const PY_FLAGS_ARG: &[&str] = &["-X", "-W"];

fn basename(w: &str) -> &str {
    match w.rsplit('/').next() {
        Some(b) if !b.is_empty() => b,
        _ => w,
    }
}

fn is_python(prog: &str) -> bool {
    let p = prog.to_ascii_lowercase();
    p.starts_with("python") || p.starts_with("pypy")
}

/// Splits and shortens `cmd` (already sanitised).
pub fn words(cmd: &str) -> Words {
    let mut it = cmd.split_whitespace().peekable();
    let Some(first) = it.next() else {
        return Words {
            words: Vec::new(),
            head: 0,
        };
    };
    let prog = basename(first).to_owned();
    let python = is_python(&prog);
    let mut words = vec![prog];
    let mut head = 1;
    if python {
        // Interpreter flags say nothing about which program this is.
        while let Some(w) = it.peek() {
            if PY_FLAGS.contains(w) || (w.starts_with("-X") && w.len() > 2) {
                it.next();
            } else if PY_FLAGS_ARG.contains(w) {
                it.next();
                it.next();
            } else {
                break;
            }
        }
        match it.next() {
            Some("-c") => {
                words.push("-c".into());
                head = 2;
            }
            Some("-m") => {
                words.push("-m".into());
                head = 2;
                if let Some(m) = it.next() {
                    words.push(m.to_owned());
                    head = 3;
                }
            }
            Some(script) if !script.starts_with('-') => {
                words.push(basename(script).to_owned());
                head = 2;
            }
            Some(other) => words.push(other.to_owned()),
            None => {}
        }
    }
    words.extend(it.map(str::to_owned));
    Words { words, head }
}

/// For each command, how many leading words it shares with the most alike
/// different one (sorted neighbours are the most alike; the same command
/// twice, as on two GPUs, is told apart from the others, not from itself).
pub fn shared_words(all: &[Words]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|a, b| all[*a].words.cmp(&all[*b].words));
    let lcp = |a: &Words, b: &Words| {
        a.words
            .iter()
            .zip(&b.words)
            .take_while(|(x, y)| x == y)
            .count()
    };
    // Runs of equal commands, and what each run shares with its neighbours.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (k, i) in order.iter().enumerate() {
        match runs.last() {
            Some(&(start, _)) if all[order[start]].words == all[*i].words => {
                if let Some(r) = runs.last_mut() {
                    r.1 = k + 1;
                }
            }
            _ => runs.push((k, k + 1)),
        }
    }
    let mut out = vec![0; all.len()];
    for (r, &(start, end)) in runs.iter().enumerate() {
        let me = &all[order[start]];
        let before = r
            .checked_sub(1)
            .map_or(0, |p| lcp(me, &all[order[runs[p].0]]));
        let after = runs.get(r + 1).map_or(0, |n| lcp(me, &all[order[n.0]]));
        for i in &order[start..end] {
            out[*i] = before.max(after);
        }
    }
    out
}

/// `s` cut to `width` characters, with "…" where it was cut.
pub fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// `w` in at most `width` characters; `shared` leading words are the same
/// in another listed command, so the words after them tell it apart. When
/// the whole does not fit: an interpreter running a script gives way to
/// the script (`train.py --lr 3e-4`); words shared with another command
/// are elided (`python3 -c … pipe_handle=8)`), keeping a flag with its
/// value (`--rank 1`); what is still too long is cut at the end.
pub fn abbreviate(w: &Words, shared: usize, width: usize) -> String {
    let words = &w.words;
    let fits = |s: &str| s.chars().count() <= width;
    let full = words.join(" ");
    if fits(&full) {
        return full;
    }
    let head = w.head.min(words.len());
    // An interpreter and its script: the script names the program.
    let script = head == 2 && !matches!(words[1].as_str(), "-c" | "-m");
    let heads: Vec<&[String]> = if script {
        vec![&words[..head], &words[1..head]]
    } else {
        vec![&words[..head]]
    };
    // Words from `j` to `to` after a head; an ellipsis where words were
    // elided.
    let compose = |h: &[String], j: usize, to: usize| -> String {
        let tail = words[j..to].join(" ");
        match (h.is_empty(), j == head) {
            (true, true) => tail,
            (true, false) => format!("… {tail}"),
            (false, true) => format!("{} {tail}", h.join(" ")),
            (false, false) => format!("{} … {tail}", h.join(" ")),
        }
    };
    let n = words.len();
    let differs = shared.min(n.saturating_sub(1));
    if differs >= head && head > 0 {
        let keep_flag = differs > head && words[differs - 1].starts_with('-');
        let from = if keep_flag { differs - 1 } else { differs };
        // The whole rest, eliding as little as possible.
        for h in &heads {
            for j in head..=from {
                let s = compose(h, j, n);
                if fits(&s) {
                    return s;
                }
            }
        }
        // The difference in view, the rest cut; the head gives way first.
        let none: &[String] = &[];
        let mut cores: Vec<(&[String], usize)> = Vec::new();
        for j in [from, differs] {
            cores.extend(heads.iter().map(|h| (*h, j)));
        }
        cores.push((&words[..1], differs));
        cores.push((none, differs));
        for (h, j) in cores {
            if j > head && fits(&compose(h, j, differs + 1)) {
                return cut(&compose(h, j, n), width);
            }
        }
        return cut(&compose(none, differs, n), width);
    }
    let short = compose(heads[heads.len() - 1], head, n);
    cut(&short, width)
}

/// Abbreviations for a list of commands, each in `width` characters.
pub fn abbreviate_all(cmds: &[&str], width: usize) -> Vec<String> {
    let ws: Vec<Words> = cmds.iter().map(|c| words(c)).collect();
    let shared = shared_words(&ws);
    ws.iter()
        .zip(shared)
        .map(|(w, s)| abbreviate(w, s, width))
        .collect()
}

/// Abbreviations of `cmds`, told apart from each other and from `among`
/// (a GPU's processes among all listed).
pub fn abbreviate_among(cmds: &[&str], among: &[&str], width: usize) -> Vec<String> {
    let ws: Vec<Words> = cmds.iter().chain(among).map(|c| words(c)).collect();
    let shared = shared_words(&ws);
    ws.iter()
        .zip(shared)
        .take(cmds.len())
        .map(|(w, s)| abbreviate(w, s, width))
        .collect()
}

/// `s` scrolled `by` characters to the left, in `width` characters: "…"
/// marks a hidden start (in place of one character, so the first step
/// already shows that something is hidden) and a hidden end, so a cut
/// command always shows it was cut. It scrolls no further than puts its
/// end in view, so at the furthest scroll of a column every command
/// shows its end. Unscrolled, it is `s` [`cut`] at the end.
pub fn window(s: &str, by: usize, width: usize) -> String {
    let by = by.min(s.chars().count().saturating_sub(width));
    if by == 0 {
        return cut(s, width);
    }
    let rest: Vec<char> = s.chars().skip(by + 1).collect();
    if width < 3 || rest.is_empty() {
        return "…".chars().take(width).collect();
    }
    let room = width - 1;
    if rest.len() <= room {
        return std::iter::once('…').chain(rest).collect();
    }
    let shown: String = rest[..room - 1].iter().collect();
    format!("…{}…", shown.trim_end())
}

/// How far the command column scrolls: until the end of the longest of
/// `lens` (in characters) is in view in a column `width` wide.
pub fn max_scroll(lens: impl IntoIterator<Item = usize>, width: usize) -> usize {
    lens.into_iter()
        .map(|l| l.saturating_sub(width))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPAWN: &str = "/opt/torch/.venv/bin/python3 -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=4, pipe_handle=8) --multiprocessing-fork";

    #[test]
    fn interpreters_lose_their_path_and_flags() {
        let w = words(SPAWN);
        assert_eq!(w.words[..3], ["python3", "-c", "from"]);
        assert_eq!(w.head, 2);
        let w = words("/usr/bin/python3 -u -X dev /srv/app/train.py --lr 3e-4");
        assert_eq!(w.words, ["python3", "train.py", "--lr", "3e-4"]);
        let w = words("python -m torch.distributed.run --nproc 8 x.py");
        assert_eq!(w.words[..3], ["python", "-m", "torch.distributed.run"]);
        assert_eq!(w.head, 3);
        let w = words("/usr/lib/xorg/Xorg :0 -nolisten tcp");
        assert_eq!(w.words, ["Xorg", ":0", "-nolisten", "tcp"]);
        assert_eq!(words("").words.len(), 0);
    }

    #[test]
    fn the_part_that_differs_stays_in_view() {
        // The H200 recording: every worker differs only in its pipe handle.
        let other = SPAWN.replace("pipe_handle=8", "pipe_handle=10");
        let out = abbreviate_all(&[SPAWN, &other], 37);
        assert_eq!(out[0], "python3 -c … pipe_handle=8) --multip…");
        assert_eq!(out[1], "python3 -c … pipe_handle=10) --multi…");
        assert!(out.iter().all(|s| s.chars().count() <= 37));
        // The crowded node at 80 columns: the script and shard stay.
        let cmds = [
            "python worker.py --shard 12",
            "python worker.py --shard 7",
            "python train.py --exp sweep-4 --lr 5e-4",
        ];
        let out = abbreviate_all(&cmds, 22);
        assert_eq!(out[0], "worker.py --shard 12");
        assert_eq!(out[1], "worker.py --shard 7");
        assert_eq!(out[2], "train.py --exp sweep-…");
        // Two ranks of one job: the flag stays with its value.
        let r0 = "python train.py --model llama-8b --ddp --rank 0 --batch 16";
        let r1 = "python train.py --model llama-8b --ddp --rank 1 --batch 16";
        let out = abbreviate_all(&[r0, r1], 22);
        assert_eq!(out[0], "train.py … --rank 0 -…");
        let out = abbreviate_all(&[r0, r1], 37);
        assert_eq!(out[0], "python train.py … --rank 0 --batch 16");
    }

    #[test]
    fn the_same_command_twice_is_told_apart_from_the_others() {
        let a = SPAWN.to_owned();
        let b = SPAWN.replace("pipe_handle=8", "pipe_handle=10");
        let out = abbreviate_all(&[&a, &b, &a], 37);
        assert_eq!(out[0], "python3 -c … pipe_handle=8) --multip…");
        assert_eq!(out[2], out[0]);
        // Narrow: the head gives way to the difference.
        let out = abbreviate_all(&[&a, &b], 22);
        assert_eq!(out[0], "… pipe_handle=8) --mu…");
    }

    #[test]
    fn short_commands_are_whole_and_nothing_overflows() {
        assert_eq!(abbreviate_all(&["vllm serve x"], 40), ["vllm serve x"]);
        for width in 0..50 {
            for s in abbreviate_all(&[SPAWN, "a b c", "python"], width) {
                assert!(s.chars().count() <= width, "{width}: {s}");
            }
        }
    }

    #[test]
    fn a_scrolled_window_marks_both_cut_ends() {
        assert_eq!(window("abcdef", 0, 9), "abcdef");
        assert_eq!(window("abcdef", 0, 4), "abc…");
        assert_eq!(window("abcdefghij", 2, 5), "…def…");
        assert_eq!(window("abcdefghij", 1, 9), "…cdefghij");
        assert_eq!(window("abcdefgh", 2, 4), "…de…");
        assert_eq!(window("abcdefgh", 9, 4), "…fgh", "no further than its end");
        assert_eq!(window("abc", 9, 5), "abc", "whole where it fits");
        // Two ranks that differ only at the end: cut, each says so; at
        // the furthest scroll, the end that tells them apart is in view.
        let r0 = "python train.py --model llama-8b --ddp --batch 16 --rank 0";
        let r1 = "python train.py --model llama-8b --ddp --batch 16 --rank 1";
        let w = 22;
        let last = max_scroll([r0.len(), r1.len()], w);
        for by in (8..last).step_by(8) {
            let (a, b) = (window(r0, by, w), window(r1, by, w));
            assert!(a.starts_with('…') && a.ends_with('…'), "{by}: {a}");
            assert_eq!(a.chars().count(), w);
            assert_eq!(a, b, "the same until the end is in view");
        }
        assert_eq!(window(r0, last, w), "…p --batch 16 --rank 0");
        assert_eq!(window(r1, last, w), "…p --batch 16 --rank 1");
        for width in 0..30 {
            for by in 0..70 {
                assert!(window(SPAWN, by, width).chars().count() <= width);
            }
        }
    }
}
