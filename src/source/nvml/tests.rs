//! NVML helpers that need no GPU: merging, utilisation samples, errors.

use super::*;

fn pi(pid: u32, mem: Option<u64>) -> ProcessInfo {
    ProcessInfo {
        pid,
        used_gpu_memory: mem.map_or(UsedGpuMemory::Unavailable, UsedGpuMemory::Used),
        gpu_instance_id: None,
        compute_instance_id: None,
    }
}

fn sample(pid: u32, ts: u64, sm: u32) -> ProcessUtilizationSample {
    ProcessUtilizationSample {
        pid,
        timestamp: ts,
        sm_util: sm,
        mem_util: 10,
        enc_util: 0,
        dec_util: 0,
    }
}

#[test]
fn compute_and_graphics_merge_by_pid() {
    let compute = [pi(10, Some(100)), pi(11, Some(50))];
    let graphics = [pi(11, Some(60)), pi(12, None)];
    let m = merge_processes(&compute, &graphics);
    assert_eq!(
        m,
        vec![
            ProcMem {
                pid: 10,
                kind: ProcKind::Compute,
                mem: Some(100)
            },
            ProcMem {
                pid: 11,
                kind: ProcKind::Both,
                mem: Some(60)
            },
            ProcMem {
                pid: 12,
                kind: ProcKind::Graphics,
                mem: None
            },
        ]
    );
    // Unavailable in one list, known in the other: keep the known one.
    let m = merge_processes(&[pi(5, None)], &[pi(5, Some(7))]);
    assert_eq!(m[0].mem, Some(7));
}

#[test]
fn newest_sample_wins_and_impossible_values_are_dropped() {
    let s = [
        sample(1, 100, 30),
        sample(1, 300, 70),
        sample(2, 200, 150),
        sample(1, 200, 50),
    ];
    let (u, ts) = latest_utilisation(&s);
    assert_eq!(ts, Some(300));
    assert_eq!(u.len(), 2);
    assert_eq!(u[0].pid, 1);
    assert_eq!(u[0].sm, Some(70));
    assert_eq!(u[1].sm, None, "150% is not a utilisation");
    assert_eq!(u[1].mem, Some(10));
    assert_eq!(latest_utilisation(&[]), (vec![], None));
}

#[test]
fn errors_are_classified() {
    assert_eq!(classify(&NvmlError::NotSupported), Outcome::Unsupported);
    assert_eq!(classify(&NvmlError::InvalidArg), Outcome::Unsupported);
    assert_eq!(classify(&NvmlError::GpuLost), Outcome::Lost);
    assert_eq!(classify(&NvmlError::Unknown), Outcome::Lost);
    assert_eq!(classify(&NvmlError::Timeout), Outcome::Missing);
}

#[test]
fn init_errors_say_what_is_missing_and_suggest_the_demo() {
    let e = init_error(NvmlError::DriverNotLoaded).to_string();
    assert!(
        e.contains("driver is not loaded") && e.contains("--demo"),
        "{e}"
    );
    let e = init_error(NvmlError::NoPermission).to_string();
    assert!(e.contains("permission") && e.contains("/dev/nvidia"), "{e}");
    let e = init_error(NvmlError::LibraryNotFound).to_string();
    assert!(e.contains(NVML_LIB) && e.contains("--demo"), "{e}");
}

#[test]
fn cuda_versions_read_like_nvidia_smi() {
    assert_eq!(cuda_version(13000), "13.0");
    assert_eq!(cuda_version(12040), "12.4");
}

#[test]
fn opening_without_a_driver_is_an_error_not_a_panic() {
    // On a machine with a GPU this opens; elsewhere it must fail cleanly.
    match NvmlSource::open() {
        Ok(s) => assert!(!s.system().gpus.is_empty()),
        Err(e) => assert!(e.to_string().contains("--demo"), "{e}"),
    }
}
