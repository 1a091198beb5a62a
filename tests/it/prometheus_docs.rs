//! The scrape config and rules in docs/prometheus.md are valid for
//! Prometheus (`promtool check config`, `promtool check rules`) and the two
//! alerts fire when they should and not before (`promtool test rules`);
//! its metric tables say what a real scrape holds (names, types, labels).

use crate::common;
use crate::prometheus::{get, start_vramwatch, wait_until};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The fenced ```yaml title="NAME"``` blocks of the doc, by name.
fn blocks(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(l) = lines.next() {
        let Some(rest) = l.strip_prefix("```yaml title=\"") else {
            continue;
        };
        let name = rest.trim_end_matches('"').to_owned();
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((name, body.join("\n") + "\n"));
    }
    out
}

fn promtool(dir: &Path, args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const ALERT_TESTS: &str = r#"rule_files:
  - vramwatch-rules.yml
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      # GPU 0: 95.7 % in use (reserved counts); GPU 1: half full but
      # forecast full in 200 s.
      - series: 'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="n1"}'
        values: '137000x20'
      - series: 'DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="n1"}'
        values: '583x20'
      - series: 'DCGM_FI_DEV_FB_FREE{gpu="0",Hostname="n1"}'
        values: '6188x20'
      - series: 'DCGM_FI_DEV_FB_USED{gpu="1",Hostname="n1"}'
        values: '70000x20'
      - series: 'DCGM_FI_DEV_FB_RESERVED{gpu="1",Hostname="n1"}'
        values: '583x20'
      - series: 'DCGM_FI_DEV_FB_FREE{gpu="1",Hostname="n1"}'
        values: '73188x20'
      - series: 'vramwatch_gpu_memory_seconds_to_full{gpu="1",Hostname="n1"}'
        values: '200x20'
    promql_expr_test:
      - expr: round(gpu:memory_used:ratio, 0.001)
        eval_time: 1m
        exp_samples:
          - labels: '{gpu="0",Hostname="n1"}'
            value: 0.957
          - labels: '{gpu="1",Hostname="n1"}'
            value: 0.491
    alert_rule_test:
      # Pending, not firing, before their `for`.
      - eval_time: 15s
        alertname: GPUMemoryAlmostFull
        exp_alerts: []
      - eval_time: 15s
        alertname: GPUMemoryFullSoon
        exp_alerts: []
      - eval_time: 2m
        alertname: GPUMemoryAlmostFull
        exp_alerts:
          - exp_labels: {severity: critical, gpu: "0", Hostname: n1}
            exp_annotations:
              summary: "GPU 0 on n1 is 95.7% full"
      - eval_time: 2m
        alertname: GPUMemoryFullSoon
        exp_alerts:
          - exp_labels: {severity: warning, gpu: "1", Hostname: n1}
            exp_annotations:
              summary: "GPU 1 on n1 is forecast to be full in 3m 20s"
"#;

#[test]
fn the_documented_config_and_rules_pass_promtool() {
    if !common::tool_available("promtool") {
        return;
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prometheus.md"))
        .expect("docs/prometheus.md");
    let blocks = blocks(&doc);
    let names: Vec<&str> = blocks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["prometheus.yml", "vramwatch-rules.yml"]);
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in &blocks {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    std::fs::write(dir.path().join("alerts-test.yml"), ALERT_TESTS).unwrap();
    promtool(dir.path(), &["check", "rules", "vramwatch-rules.yml"]);
    // Also loads the rule file it names.
    promtool(dir.path(), &["check", "config", "prometheus.yml"]);
    promtool(dir.path(), &["test", "rules", "alerts-test.yml"]);
}

/// The cells of a markdown table row.
fn cells(row: &str) -> Vec<&str> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(str::trim).collect()
}

/// A documented family: its type and label names in order; whether the
/// doc says it can be absent.
#[derive(Debug)]
struct Documented {
    kind: String,
    labels: Vec<String>,
    may_be_absent: bool,
}

/// The rows of the doc's `| metric | type | labels | … |` tables, the
/// label sets (`*dcgm*` …) of its `| set | labels |` table expanded.
fn documented(doc: &str) -> BTreeMap<String, Documented> {
    let names = |cell: &str| -> Vec<String> {
        cell.split(", ")
            .map(|c| c.trim_matches('`').to_owned())
            .collect()
    };
    let mut sets: HashMap<String, Vec<String>> = HashMap::new();
    let mut out = BTreeMap::new();
    let mut table = "";
    for line in doc.lines() {
        if !line.starts_with('|') {
            table = "";
            continue;
        }
        let c = cells(line);
        if c.len() >= 2 && c[0] == "set" && c[1] == "labels" {
            table = "sets";
            continue;
        }
        if c.len() >= 3 && c[0] == "metric" && c[1] == "type" && c[2] == "labels" {
            table = "metrics";
            continue;
        }
        if c[0].starts_with("---") {
            continue;
        }
        match table {
            "sets" => {
                sets.insert(c[0].trim_matches('*').to_owned(), names(c[1]));
            }
            "metrics" => {
                let mut labels = Vec::new();
                for item in c[2].split(", ") {
                    match item.strip_prefix('*').and_then(|s| s.strip_suffix('*')) {
                        Some(set) => labels.extend(
                            sets.get(set)
                                .unwrap_or_else(|| panic!("no label set *{set}*"))
                                .clone(),
                        ),
                        None => labels.push(item.trim_matches('`').to_owned()),
                    }
                }
                let name = c[0].trim_matches('`').to_owned();
                let row = Documented {
                    kind: c[1].to_owned(),
                    labels,
                    may_be_absent: c[3..].iter().any(|m| m.contains("absent")),
                };
                assert!(out.insert(name.clone(), row).is_none(), "{name} twice");
            }
            _ => {}
        }
    }
    out
}

/// The label names of a sample line, in order (values may hold escaped
/// quotes, commas and braces).
fn sample_labels(line: &str) -> Vec<String> {
    let Some((_, rest)) = line.split_once('{') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut chars = rest.chars();
    loop {
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        if name.is_empty() || name.starts_with('}') {
            break;
        }
        assert_eq!(chars.next(), Some('"'), "{line}");
        let mut escaped = false;
        for c in chars.by_ref() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => break,
                _ => escaped = false,
            }
        }
        out.push(name.trim_start_matches(',').to_owned());
        if chars.clone().next() == Some('}') {
            break;
        }
    }
    out
}

/// Families of a scrape: type and label names (as the first sample has
/// them; every sample must agree).
fn scraped(text: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            out.insert(name.to_owned(), (kind.to_owned(), Vec::new()));
            continue;
        }
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let name = l.split(['{', ' ']).next().unwrap();
        let labels = sample_labels(l);
        let fam = out
            .get_mut(name)
            .unwrap_or_else(|| panic!("no TYPE for {l}"));
        if fam.1.is_empty() {
            fam.1 = labels;
        } else if name == "vramwatch_process_info" {
            // The labels every process has; `container`, `pod`,
            // `namespace`, `pod_uid` come where known (the demo's vLLM
            // server is in a pod) and are documented below the table.
            fam.1.retain(|x| labels.contains(x));
        } else {
            assert_eq!(fam.1, labels, "{l}");
        }
    }
    out
}

#[test]
fn the_metric_tables_match_a_real_scrape() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prometheus.md"))
        .expect("docs/prometheus.md");
    let docs = documented(&doc);
    assert!(docs.len() > 40, "{} rows", docs.len());
    let (_vw, vw) = start_vramwatch("1s");
    let deadline = Instant::now() + Duration::from_secs(20);
    // The analysis figures come with the pipeline's first snapshots.
    let mut text = String::new();
    wait_until("a scrape with the analysis figures", deadline, || {
        text = get(vw, "/metrics").map(|(_, b)| b).unwrap_or_default();
        text.contains("vramwatch_gpu_memory_growth_bytes_per_second{")
    });
    let got = scraped(&text);
    let mut problems = Vec::new();
    for (name, (kind, labels)) in &got {
        match docs.get(name) {
            None => problems.push(format!("{name} is exported but not in docs/prometheus.md")),
            Some(d) if &d.kind != kind => {
                problems.push(format!("{name}: type {kind}, documented {}", d.kind))
            }
            Some(d) if &d.labels != labels => problems.push(format!(
                "{name}: labels {labels:?}, documented {:?}",
                d.labels
            )),
            Some(_) => {}
        }
    }
    for (name, d) in &docs {
        if !got.contains_key(name) && !d.may_be_absent {
            problems.push(format!(
                "{name} is documented (without \"absent\") but not in a scrape of serve --demo"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn sample_labels_are_read_past_escaped_values() {
    assert_eq!(
        sample_labels(r#"m{a="x\"},b=\\",b="}",c=""} 1"#),
        ["a", "b", "c"]
    );
    assert!(sample_labels("m 1").is_empty());
}
