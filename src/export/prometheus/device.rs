//! Device families: dcgm-exporter's default fields under its names, units
//! and labels, then vramwatch's own per-GPU memory (in bytes) and state.

use std::fmt::Write as _;

use crate::model::{EventKind, GpuSample, GpuState, SystemInfo};

use super::{Body, Family, Kind, Value, labels};

/// The two label sets of GPU `index`: `(index, dcgm labels, vramwatch
/// labels)`, the host name under `host_label`. A GPU the system info does
/// not list gets empty `UUID`, `pci_bus_id` and `modelName`.
pub(super) fn gpu_labels(
    system: &SystemInfo,
    index: u32,
    host_label: &str,
) -> (u32, String, String) {
    let d = system.gpus.iter().find(|d| d.index == index);
    let gpu = index.to_string();
    let dev = format!("nvidia{index}");
    let uuid = d.map_or("", |d| d.uuid.as_str());
    let bus = d.map_or("", |d| d.pci_bus_id.as_str());
    let model = d.map_or("", |d| d.name.as_str());
    let mut dcgm = String::new();
    let mut pairs = vec![
        ("gpu", gpu.as_str()),
        ("UUID", uuid),
        ("pci_bus_id", bus),
        ("device", dev.as_str()),
        ("modelName", model),
        (host_label, system.host.as_str()),
    ];
    if let Some(v) = system.driver_version.as_deref() {
        pairs.push(("DCGM_FI_DRIVER_VERSION", v));
    }
    labels(&mut dcgm, &pairs);
    let mut own = String::new();
    labels(
        &mut own,
        &[
            ("gpu", gpu.as_str()),
            ("UUID", uuid),
            ("pci_bus_id", bus),
            ("device", dev.as_str()),
            (host_label, system.host.as_str()),
        ],
    );
    (index, dcgm, own)
}

fn mib(b: u64) -> Value {
    // Rounded up, as nvidia-smi and DCGM show MiB.
    Value::Int(crate::model::units::mib(b))
}

fn int(v: Option<u32>) -> Option<Value> {
    v.map(|v| Value::Int(v.into()))
}

/// How one per-GPU family reads its value from a sample.
type Reading = fn(&GpuSample) -> Option<Value>;

/// dcgm-exporter's default fields that NVML can give (XID aside), in its
/// order, with its types and HELP texts.
const DCGM_FIELDS: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_SM_CLOCK",
        Kind::Gauge,
        "SM clock frequency (in MHz).",
        |g| int(g.sm_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        Kind::Gauge,
        "Memory clock frequency (in MHz).",
        |g| int(g.mem_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        Kind::Gauge,
        "Memory temperature (in C).",
        |g| int(g.mem_temp_c),
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP",
        Kind::Gauge,
        "GPU temperature (in C).",
        |g| int(g.temp_c),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        Kind::Gauge,
        "Power draw (in W).",
        |g| g.power_mw.map(|mw| Value::Float(f64::from(mw) / 1000.0)),
    ),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        Kind::Counter,
        "Total energy consumption since boot (in mJ).",
        |g| g.energy_mj.map(Value::Int),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        Kind::Counter,
        "Total number of PCIe retries.",
        |g| int(g.pcie_replays),
    ),
    (
        "DCGM_FI_DEV_GPU_UTIL",
        Kind::Gauge,
        "GPU utilization (in %).",
        |g| int(g.util_gpu),
    ),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        Kind::Gauge,
        "Memory utilization (in %).",
        |g| int(g.util_mem),
    ),
    (
        "DCGM_FI_DEV_ENC_UTIL",
        Kind::Gauge,
        "Encoder utilization (in %).",
        |g| int(g.enc_util),
    ),
    (
        "DCGM_FI_DEV_DEC_UTIL",
        Kind::Gauge,
        "Decoder utilization (in %).",
        |g| int(g.dec_util),
    ),
];

/// dcgm-exporter's remapped-row fields, the last of its default list.
const DCGM_REMAP: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        Kind::Counter,
        "Number of remapped rows for uncorrectable errors",
        |g| g.remapped_rows_unc.map(Value::Int),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        Kind::Counter,
        "Number of remapped rows for correctable errors",
        |g| g.remapped_rows_cor.map(Value::Int),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        Kind::Gauge,
        "Whether remapping of rows has failed",
        |g| g.row_remap_failure.map(|f| Value::Int(u64::from(f))),
    ),
];

/// Bytes per second from NVML's KB/s (its PCIe sample is in KiB).
fn kib_per_s(v: Option<u32>) -> Option<Value> {
    v.map(|k| Value::Int(u64::from(k) * 1024))
}

/// Fields DCGM has and dcgm-exporter can be told to export (not in its
/// default list), and the DCP section's PCIe rates, which NVML gives.
const DCGM_MORE: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
        Kind::Gauge,
        "Effective power limit that the driver enforces (in W).",
        |g| {
            g.power_limit_mw
                .map(|mw| Value::Float(f64::from(mw) / 1000.0))
        },
    ),
    (
        "DCGM_FI_DEV_PSTATE",
        Kind::Gauge,
        "Performance state (P-State) 0-15. 0=highest.",
        |g| int(g.pstate),
    ),
    // In dcgm-exporter's default list, commented out.
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        Kind::Counter,
        "Total number of single-bit volatile ECC errors.",
        |g| g.ecc_sbe_volatile.map(Value::Int),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        Kind::Counter,
        "Total number of double-bit volatile ECC errors.",
        |g| g.ecc_dbe_volatile.map(Value::Int),
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        Kind::Gauge,
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second (vramwatch: NVML's PCIe throughput sample, not a DCGM profiling counter).",
        |g| kib_per_s(g.pcie_tx_kbs),
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        Kind::Gauge,
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second (vramwatch: NVML's PCIe throughput sample, not a DCGM profiling counter).",
        |g| kib_per_s(g.pcie_rx_kbs),
    ),
];

/// Memory, after the XID field, as dcgm-exporter orders them.
const DCGM_MEMORY: &[(&str, Kind, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_FB_FREE",
        Kind::Gauge,
        "Framebuffer memory free (in MiB).",
        |g| g.mem.map(|m| mib(m.free)),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        Kind::Gauge,
        "Framebuffer memory used (in MiB).",
        |g| g.mem.map(|m| mib(m.used)),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        Kind::Gauge,
        "Framebuffer memory reserved (in MiB).",
        |g| g.mem.map(|m| mib(m.reserved)),
    ),
    // A DCGM profiling field, which NVML cannot read: NVML's GPU
    // utilisation stands in for it, and the HELP text says so.
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        Kind::Gauge,
        "Ratio of time the graphics engine is active (vramwatch: NVML GPU utilization / 100, not a DCGM profiling counter).",
        |g| g.util_gpu.map(|u| Value::Float(f64::from(u) / 100.0)),
    ),
];

/// vramwatch's own per-GPU memory families (base units).
const OWN_MEMORY: &[(&str, Kind, &str, Reading)] = &[
    (
        "vramwatch_gpu_memory_used_bytes",
        Kind::Gauge,
        "Device memory in use, bytes (NVML v2 `used`: reserved memory not included).",
        |g| g.mem.map(|m| Value::Int(m.used)),
    ),
    (
        "vramwatch_gpu_memory_reserved_bytes",
        Kind::Gauge,
        "Device memory the driver reserves and no process can have, bytes.",
        |g| g.mem.map(|m| Value::Int(m.reserved)),
    ),
    (
        "vramwatch_gpu_memory_total_bytes",
        Kind::Gauge,
        "Device memory in total, bytes.",
        |g| g.mem.map(|m| Value::Int(m.total)),
    ),
];

/// Every per-GPU family, in dcgm-exporter's order (XID between its fields
/// and its memory, remapped rows last), then vramwatch's.
pub(super) fn write(body: &Body, out: &mut String) {
    fields(body, out, DCGM_FIELDS, true);
    xid(body, out);
    fields(body, out, DCGM_MEMORY, true);
    fields(body, out, DCGM_REMAP, true);
    fields(body, out, DCGM_MORE, true);
    fields(body, out, OWN_MEMORY, false);
    unaccounted(body, out);
    state(body, out);
}

/// One family per entry of `table`, one sample per GPU that has a value.
fn fields(
    body: &Body,
    out: &mut String,
    table: &[(&'static str, Kind, &'static str, Reading)],
    dcgm: bool,
) {
    for &(name, kind, help, read) in table {
        let mut fam = Family::new(out, name, kind, help);
        for (g, (_, d, own)) in body.snap.gpus.iter().zip(&body.labels.gpus) {
            fam.maybe(if dcgm { d } else { own }, read(g));
        }
    }
}

fn xid(body: &Body, out: &mut String) {
    let mut fam = Family::new(
        out,
        "DCGM_FI_DEV_XID_ERRORS",
        Kind::Gauge,
        "Value of the last XID error encountered.",
    );
    for (g, (_, dcgm, _)) in body.snap.gpus.iter().zip(&body.labels.gpus) {
        let xid = body.last_xid.get(&g.index).copied().unwrap_or(0);
        fam.sample(dcgm, Value::Int(xid));
    }
}

fn unaccounted(body: &Body, out: &mut String) {
    let (l, s) = (body.labels, body.snap);
    let mut fam = Family::new(
        out,
        "vramwatch_gpu_memory_unaccounted_bytes",
        Kind::Gauge,
        "Device memory in use that no listed process accounts for (driver, contexts, other containers), bytes.",
    );
    for (g, (_, _, own)) in s.gpus.iter().zip(&l.gpus) {
        fam.maybe(own, g.unaccounted(&s.procs).map(Value::Int));
    }
}

/// One-hot: a sample per state per GPU, 1 for the state it is in.
fn state(body: &Body, out: &mut String) {
    let mut fam = Family::new(
        out,
        "vramwatch_gpu_state",
        Kind::Gauge,
        "Health of the GPU's readings: 1 for the current state (ok: read this interval, stale: reader late, values older; lost: off the bus).",
    );
    let mut buf = String::new();
    for (g, (_, _, own)) in body.snap.gpus.iter().zip(&body.labels.gpus) {
        for (name, st) in [
            ("ok", GpuState::Ok),
            ("stale", GpuState::Stale),
            ("lost", GpuState::Lost),
        ] {
            buf.clear();
            buf.push_str(own);
            let _ = write!(buf, ",state=\"{name}\"");
            fam.sample(&buf, Value::Int(u64::from(g.state == st)));
        }
    }
}

/// The XID code an event reports (`XID 79 on GPU 0`), if it is one.
pub(crate) fn xid_of(kind: EventKind, message: &str) -> Option<u64> {
    if kind != EventKind::Xid {
        return None;
    }
    let rest = message.strip_prefix("XID ")?;
    let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}
