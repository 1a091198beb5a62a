//! NVIDIA's Grafana dashboard for dcgm-exporter (grafana.com 12239, the
//! copy in `tests/fixtures/grafana/`) against `vramwatch serve --demo`
//! scraped by a real Prometheus: every template variable's query and every
//! panel's PromQL, Grafana's variables substituted, run as Grafana would;
//! a table of which panels have data; a failure when a panel whose metrics
//! vramwatch exports shows nothing.
//!
//! Without the fixture the test says so and passes (the dashboard is not
//! ours to ship); a fixture that is there but cannot be read is a failure
//! under `VRAMWATCH_REQUIRE_TOOLS=1`.

use crate::common;
use crate::prometheus::{get, label, query, start_prometheus, start_vramwatch, wait_until};

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/grafana/dcgm-exporter-dashboard.json"
);

/// A PromQL query of the dashboard: where it is, and the text.
#[derive(Debug)]
struct Query {
    panel: String,
    expr: String,
}

/// Every panel's targets (rows' nested panels included), in order.
fn panel_queries(dash: &Value) -> Vec<Query> {
    fn walk(panels: &Value, out: &mut Vec<Query>) {
        for p in panels.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("(untitled)").to_owned();
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = t["expr"].as_str().filter(|e| !e.trim().is_empty()) {
                    out.push(Query {
                        panel: title.clone(),
                        expr: expr.to_owned(),
                    });
                }
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dash["panels"], &mut out);
    out
}

/// The template variables that query Prometheus: (name, query).
fn variable_queries(dash: &Value) -> Vec<(String, String)> {
    dash["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["type"] == "query")
        .filter_map(|v| {
            let q = match &v["query"] {
                Value::String(s) => s.clone(),
                // Newer Grafana: {"query": "...", "refId": ...}.
                o => o["query"].as_str()?.to_owned(),
            };
            Some((v["name"].as_str()?.to_owned(), q))
        })
        .collect()
}

/// `$name`, `${name}`, `${name:format}` and `[[name]]` replaced by their
/// values; the first unknown name is an error.
fn substitute(expr: &str, vars: &HashMap<&str, String>) -> Result<String, String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = expr;
    while let Some(i) = rest.find(['$', '[']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let (name, used) = if let Some(t) = tail.strip_prefix("${") {
            let end = t
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {expr}"))?;
            (t[..end].split(':').next().unwrap_or(""), end + 3)
        } else if let Some(t) = tail.strip_prefix("[[") {
            let end = t
                .find("]]")
                .ok_or_else(|| format!("unclosed [[ in {expr}"))?;
            (t[..end].split(':').next().unwrap_or(""), end + 4)
        } else if let Some(t) = tail.strip_prefix('$') {
            let end = t.find(|c| !ident(c)).unwrap_or(t.len());
            (&t[..end], end + 1)
        } else {
            // A `[` of PromQL (a range).
            out.push('[');
            rest = &tail[1..];
            continue;
        };
        if name.is_empty() {
            out.push_str(&tail[..used]);
        } else {
            out.push_str(vars.get(name).ok_or_else(|| format!("${name}"))?);
        }
        rest = &tail[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The metric names of vramwatch's and DCGM's namespaces a query reads.
fn metrics_of(expr: &str) -> BTreeSet<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| w.starts_with("DCGM_") || w.starts_with("vramwatch_"))
        .map(str::to_owned)
        .collect()
}

/// What a Grafana template query returns: its values.
fn run_variable(prom: SocketAddr, q: &str) -> Result<Vec<String>, String> {
    let q = q.trim();
    let inner = |f: &str| {
        q.strip_prefix(f)
            .and_then(|r| r.trim().strip_prefix('('))
            .and_then(|r| r.trim_end().strip_suffix(')'))
            .map(str::trim)
    };
    if let Some(args) = inner("label_values") {
        // label_values(selector, label) or label_values(label).
        let (selector, name) = match args.rsplit_once(',') {
            Some((s, l)) => (s.trim(), l.trim()),
            None => ("", args),
        };
        let found = if selector.is_empty() {
            let (st, body) =
                get(prom, &format!("/api/v1/label/{name}/values")).map_err(|e| e.to_string())?;
            let v: Value = serde_json::from_str(&body).map_err(|e| format!("{st}: {e}"))?;
            v["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        } else {
            query(prom, &format!("count by ({name}) ({selector})"))
                .iter()
                .map(|(m, _)| label(m, name).to_owned())
                .filter(|v| !v.is_empty())
                .collect()
        };
        return Ok(found);
    }
    if let Some(e) = inner("query_result") {
        return Ok(query(prom, e).iter().map(|(_, v)| v.to_string()).collect());
    }
    if let Some(re) = inner("metrics") {
        let all = query(
            prom,
            &format!("count by (__name__) ({{__name__=~\"{re}\"}})"),
        );
        return Ok(all
            .iter()
            .map(|(m, _)| label(m, "__name__").to_owned())
            .collect());
    }
    Err(format!("a template query this test cannot run: {q}"))
}

/// The dashboard, `None` (with a notice) when it is absent, or broken and
/// that is tolerated.
fn dashboard() -> Option<Value> {
    let text = match std::fs::read_to_string(FIXTURE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "SKIPPED: {FIXTURE} is not there: copy grafana/dcgm-exporter-dashboard.json from NVIDIA's dcgm-exporter repository to run this test"
            );
            return None;
        }
        Err(e) => return broken(&format!("cannot be read: {e}")),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v) if v["panels"].is_array() => Some(v),
        Ok(_) => broken("has no \"panels\" list"),
        Err(e) => broken(&format!("is not JSON: {e}")),
    }
}

fn broken(why: &str) -> Option<Value> {
    let msg = format!("{FIXTURE} {why}");
    if std::env::var("VRAMWATCH_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}; set VRAMWATCH_REQUIRE_TOOLS=1 to make this a failure");
    None
}

/// The families a raw scrape of vramwatch holds.
fn exported(vw: SocketAddr) -> BTreeSet<String> {
    let (_, text) = get(vw, "/metrics").expect("a scrape");
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_dcgm_exporter_dashboard_12239_shows_vramwatch() {
    let Some(dash) = dashboard() else {
        return;
    };
    if !common::tool_available("prometheus") {
        return;
    }
    let panels = panel_queries(&dash);
    let variables = variable_queries(&dash);
    assert!(!panels.is_empty(), "no panel queries in {FIXTURE}");

    let deadline = Instant::now() + Duration::from_secs(30);
    let (_vw, vw) = start_vramwatch("1s");
    let dir = tempfile::tempdir().unwrap();
    let (_prom, prom) = start_prometheus(dir.path(), vw);
    wait_until("Prometheus to start", deadline, || {
        matches!(get(prom, "/-/ready"), Ok((200, _)))
    });
    // A few scrapes, so that a rate over `$__rate_interval` has points.
    wait_until("four scrapes", deadline, || {
        let n = query(prom, "count_over_time(up{job=\"vramwatch\"}[1m])");
        n.first().is_some_and(|(_, v)| *v >= 4.0)
    });
    let host = host_of(vw);
    let target = vw.to_string();
    let vars: HashMap<&str, String> = HashMap::from([
        ("gpu", ".*".to_owned()),
        ("instance", target.clone()),
        ("Hostname", host.clone()),
        ("hostname", host.clone()),
        ("__rate_interval", "1m".to_owned()),
        ("__interval", "15s".to_owned()),
        ("__interval_ms", "15000".to_owned()),
        ("__range", "5m".to_owned()),
        ("datasource", "prometheus".to_owned()),
        ("DS_PROMETHEUS", "prometheus".to_owned()),
    ]);
    let ours = exported(vw);

    let mut table = vec![format!(
        "Grafana 12239 ({}) against vramwatch serve --demo:",
        Path::new(FIXTURE).file_name().unwrap().to_string_lossy()
    )];
    let mut failures = Vec::new();
    for (name, q) in &variables {
        let q = substitute(q, &vars).unwrap_or_else(|v| panic!("variable {name}: unknown {v}"));
        let result = run_variable(prom, &q);
        let line = match &result {
            Ok(v) if !v.is_empty() => format!("{} value(s): {}", v.len(), v.join(", ")),
            Ok(_) => {
                failures.push(format!("variable ${name} ({q}) has no value"));
                "no value".to_owned()
            }
            Err(e) => {
                failures.push(format!("variable ${name}: {e}"));
                e.clone()
            }
        };
        table.push(format!("| variable ${name} | {q} | {line} |"));
    }
    // The instance picker offers the target.
    if let Some((_, q)) = variables.iter().find(|(n, _)| n == "instance") {
        let values = run_variable(prom, &substitute(q, &vars).unwrap()).unwrap_or_default();
        assert!(
            values.contains(&target),
            "$instance: {values:?}, not {target}"
        );
    }
    let mut tensor_seen = false;
    for p in &panels {
        let expr = substitute(&p.expr, &vars)
            .unwrap_or_else(|v| panic!("panel {:?}: unknown variable {v} in {}", p.panel, p.expr));
        let missing: Vec<String> = metrics_of(&expr)
            .into_iter()
            .filter(|m| !ours.contains(m))
            .collect();
        let series = query(prom, &expr);
        let status = if !series.is_empty() {
            format!("data: {} series", series.len())
        } else if !missing.is_empty() {
            format!("no data: metric not exported ({})", missing.join(", "))
        } else {
            failures.push(format!(
                "panel {:?} shows nothing though vramwatch exports its metrics: {expr}",
                p.panel
            ));
            "NO DATA".to_owned()
        };
        if p.expr.contains("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") {
            tensor_seen = true;
            assert!(
                status.starts_with("no data: metric not exported"),
                "{}: {status}",
                p.panel
            );
        }
        table.push(format!("| {} | {expr} | {status} |", p.panel));
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{failures:#?}");
    if !tensor_seen {
        eprintln!("note: this copy of the dashboard has no Tensor Core panel");
    }
}

/// The host name vramwatch reports (its `Hostname` label).
fn host_of(vw: SocketAddr) -> String {
    let (_, body) = get(vw, "/snapshot").expect("/snapshot");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    v["system"]["host"].as_str().unwrap_or("").to_owned()
}

#[test]
fn grafana_variables_are_substituted_as_grafana_does() {
    let vars = HashMap::from([
        ("gpu", ".*".to_owned()),
        ("instance", "10.0.0.1:9400".to_owned()),
        ("__rate_interval", "1m".to_owned()),
        ("__interval", "15s".to_owned()),
    ]);
    let s = |e: &str| substitute(e, &vars);
    assert_eq!(
        s("rate(X{instance=~\"$instance\", gpu=~\"${gpu}\"}[$__rate_interval])").unwrap(),
        "rate(X{instance=~\"10.0.0.1:9400\", gpu=~\".*\"}[1m])"
    );
    assert_eq!(s("[[gpu]] ${gpu:regex} $__interval").unwrap(), ".* .* 15s");
    assert_eq!(s("sum(x[5m]) / 2").unwrap(), "sum(x[5m]) / 2");
    assert_eq!(s("$unknown").unwrap_err(), "$unknown");
    assert_eq!(
        metrics_of("avg(DCGM_FI_DEV_GPU_TEMP{gpu=~\".*\"}) * on(gpu) vramwatch_gpu_state"),
        BTreeSet::from([
            "DCGM_FI_DEV_GPU_TEMP".to_owned(),
            "vramwatch_gpu_state".to_owned()
        ])
    );
}
