//! The scrape config and rules in docs/prometheus.md are valid for
//! Prometheus (`promtool check config`, `promtool check rules`) and the two
//! alerts fire when they should and not before (`promtool test rules`).

use crate::common;

use std::path::Path;
use std::process::Command;

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
