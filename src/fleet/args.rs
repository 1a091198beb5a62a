//! `vramwatch fleet`'s command line and what it resolves to with the
//! environment. Credentials come only from the environment: a command line
//! is visible to every user of the machine (`ps`).
//!
//! The arguments live here, not in `commands`, so that `cli` can name them
//! without `cli` and `commands` using each other.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::client::{Auth, parse_base};
use super::queries::{DEFAULT_HOST_LABELS, Queries};
use crate::config::units::parse_duration_in;

/// The Prometheus base URL when `--prometheus` is not given.
pub const ENV_URL: &str = "VRAMWATCH_FLEET_PROMETHEUS";
/// The selector when `--selector` is not given.
pub const ENV_SELECTOR: &str = "VRAMWATCH_FLEET_SELECTOR";
/// A bearer token.
pub const ENV_TOKEN: &str = "VRAMWATCH_FLEET_TOKEN";
/// Basic auth.
pub const ENV_USER: &str = "VRAMWATCH_FLEET_USER";
pub const ENV_PASSWORD: &str = "VRAMWATCH_FLEET_PASSWORD";

/// The refresh interval without `--interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// `vramwatch fleet`: every GPU of a cluster, read from Prometheus.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// Prometheus base URL, e.g. http://prometheus:9090 (default:
    /// $VRAMWATCH_FLEET_PROMETHEUS). Credentials: VRAMWATCH_FLEET_TOKEN, or
    /// VRAMWATCH_FLEET_USER and VRAMWATCH_FLEET_PASSWORD.
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,

    /// Label matchers of the GPU exporters' series, e.g. '{job="gpu"}'
    /// (default: $VRAMWATCH_FLEET_SELECTOR, else every series).
    #[arg(long, value_name = "MATCHERS")]
    pub selector: Option<String>,

    /// Labels that name a series' host, first present wins.
    #[arg(
        long = "host-label",
        value_name = "LABEL,...",
        value_delimiter = ',',
        default_value = "host,Hostname,hostname,instance"
    )]
    pub host_labels: Vec<String>,

    /// Refresh interval, e.g. 5s, 30s (1s to 1h; default 5s).
    #[arg(long, value_name = "DURATION", value_parser = parse_refresh)]
    pub interval: Option<Duration>,

    /// Rows of the process tables (the biggest processes).
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub top: u16,

    /// Deadline of each request to Prometheus.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_timeout)]
    pub timeout: Duration,

    /// Fetch once, print the fleet's hosts and exit (for scripts).
    #[arg(long)]
    pub once: bool,

    /// With --once: print JSON.
    #[arg(long, requires = "once")]
    pub json: bool,

    /// Config file for keys, thresholds and colours (default: the platform
    /// config dir's vramwatch/config.toml, if it exists).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Draw with ASCII only; as the dashboard's --ascii.
    #[arg(long)]
    pub ascii: bool,

    /// Colour depth; as the dashboard's --color.
    #[arg(long, value_enum, value_name = "DEPTH")]
    pub color: Option<Color>,
}

/// `--color`: the dashboard's depths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    #[value(name = "16")]
    Ansi16,
    #[value(name = "256")]
    Ansi256,
    Truecolor,
}

/// How often the fleet asks each host: 1s to 1h.
fn parse_refresh(s: &str) -> Result<Duration, String> {
    let range = Duration::from_secs(1)..=Duration::from_secs(3600);
    parse_duration_in(s, &range, "")
}

/// How long one host may take to answer: 100ms to 10m.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let range = Duration::from_millis(100)..=Duration::from_secs(600);
    parse_duration_in(s, &range, "")
}

/// Everything the fleet needs, resolved and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub url: String,
    pub queries: Queries,
    pub auth: Auth,
    pub interval: Duration,
    pub timeout: Duration,
    pub top: usize,
    /// A selector was given (so down targets without figures are hosts).
    pub scoped: bool,
}

impl Options {
    /// `args` with the environment (`env` looks a variable up; empty counts
    /// as unset).
    pub fn resolve(
        args: &FleetArgs,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Options, String> {
        let env = |k: &str| env(k).filter(|v| !v.is_empty());
        let url = args.prometheus.clone().or_else(|| env(ENV_URL)).ok_or_else(|| {
            format!("give --prometheus URL (or set {ENV_URL}), e.g. --prometheus http://prometheus:9090")
        })?;
        let url = parse_base(&url).map_err(|e| e.to_string())?;
        let selector = args
            .selector
            .clone()
            .or_else(|| env(ENV_SELECTOR))
            .unwrap_or_default();
        let interval = args.interval.unwrap_or(DEFAULT_INTERVAL);
        let labels: Vec<String> = args
            .host_labels
            .iter()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        let labels = if labels.is_empty() {
            DEFAULT_HOST_LABELS.iter().map(|s| s.to_string()).collect()
        } else {
            labels
        };
        let queries = Queries::new(&selector, &labels, interval.as_secs().max(1))?;
        let auth = match (env(ENV_TOKEN), env(ENV_USER), env(ENV_PASSWORD)) {
            (Some(_), Some(_), _) => {
                return Err(format!("set either {ENV_TOKEN} or {ENV_USER}, not both"));
            }
            (Some(t), None, _) => Auth::Bearer(t),
            (None, Some(user), Some(password)) => Auth::Basic { user, password },
            (None, Some(_), None) => {
                return Err(format!("{ENV_USER} is set but {ENV_PASSWORD} is not"));
            }
            (None, None, Some(_)) => {
                return Err(format!("{ENV_PASSWORD} is set but {ENV_USER} is not"));
            }
            (None, None, None) => Auth::None,
        };
        Ok(Options {
            url,
            scoped: !queries.matchers().is_empty(),
            queries,
            auth,
            interval,
            timeout: args.timeout,
            top: usize::from(args.top),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        fleet: FleetArgs,
    }

    fn args(a: &[&str]) -> FleetArgs {
        let mut v = vec!["fleet"];
        v.extend_from_slice(a);
        Cli::try_parse_from(v).unwrap().fleet
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_url_comes_from_the_flag_or_the_environment() {
        let a = args(&[]);
        let e = Options::resolve(&a, env(&[])).unwrap_err();
        assert!(e.contains("--prometheus"), "{e}");
        let o = Options::resolve(&a, env(&[(ENV_URL, "http://p:9090/")])).unwrap();
        assert_eq!(o.url, "http://p:9090");
        assert_eq!(o.interval, DEFAULT_INTERVAL);
        assert!(!o.scoped);
        let a = args(&[
            "--prometheus",
            "http://q:9090",
            "--selector",
            "{job=\"gpu\"}",
            "--interval",
            "2s",
        ]);
        let o = Options::resolve(&a, env(&[(ENV_URL, "http://p")])).unwrap();
        assert_eq!(o.interval, Duration::from_secs(2));
        assert_eq!(o.url, "http://q:9090");
        assert!(o.scoped);
        assert_eq!(o.queries.matchers(), "job=\"gpu\"");
    }

    #[test]
    fn credentials_come_from_the_environment_only() {
        let a = args(&["--prometheus", "http://p"]);
        let o = Options::resolve(&a, env(&[(ENV_TOKEN, "t")])).unwrap();
        assert_eq!(o.auth, Auth::Bearer("t".into()));
        let o = Options::resolve(&a, env(&[(ENV_USER, "u"), (ENV_PASSWORD, "p")])).unwrap();
        assert_eq!(
            o.auth,
            Auth::Basic {
                user: "u".into(),
                password: "p".into()
            }
        );
        assert!(Options::resolve(&a, env(&[(ENV_USER, "u")])).is_err());
        assert!(Options::resolve(&a, env(&[(ENV_TOKEN, "t"), (ENV_USER, "u")])).is_err());
        let a = args(&["--prometheus", "http://u:p@p"]);
        assert!(Options::resolve(&a, env(&[])).is_err());
    }

    #[test]
    fn flags_are_checked() {
        let a = args(&["--prometheus", "http://p", "--host-label", "node,instance"]);
        let o = Options::resolve(&a, env(&[])).unwrap();
        assert_eq!(o.queries.host_labels(), ["node", "instance"]);
        assert!(Cli::try_parse_from(["fleet", "--interval", "200ms"]).is_err());
        let mut v = vec!["fleet", "--json"];
        assert!(
            Cli::try_parse_from(v.clone()).is_err(),
            "--json needs --once"
        );
        v.push("--once");
        assert!(Cli::try_parse_from(v).is_ok());
        assert!(Cli::try_parse_from(["fleet", "--top", "0"]).is_err());
        let Err(e) = Cli::try_parse_from(["fleet", "--timeout", "1ms"]) else {
            panic!("--timeout 1ms accepted");
        };
        assert!(
            e.to_string().contains("must be between 100ms and 10m"),
            "{e}"
        );
        let Err(e) = Cli::try_parse_from(["fleet", "--interval", "often"]) else {
            panic!("--interval often accepted");
        };
        let e = e.to_string();
        assert!(
            e.contains("use a number with a unit (ms, s, m, h, d) between 1s and 1h"),
            "{e}"
        );
    }
}
