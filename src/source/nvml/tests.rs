//! NVML helpers that need no GPU: merging, utilisation samples, errors.

use super::*;
use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;

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
    let (u, ts) = latest_utilisation(&s, None);
    assert_eq!(ts, Some(300));
    assert_eq!(u.len(), 2);
    assert_eq!(u[0].pid, 1);
    assert_eq!(u[0].sm, Some(70));
    assert_eq!(u[1].sm, None, "150% is not a utilisation");
    assert_eq!(u[1].mem, Some(10));
    assert_eq!(latest_utilisation(&[], None), (vec![], None));
    assert_eq!(latest_utilisation(&[], Some(1)), (vec![], None));
}

#[test]
fn a_first_read_leaves_out_what_was_buffered_long_before() {
    // Process 2 was busy 30 s before process 1's newest sample, and has
    // had none since: idle now, not 90 %.
    let s = [
        sample(2, 10_000_000, 90),
        sample(1, 39_500_000, 40),
        sample(1, 40_000_000, 60),
        sample(3, 39_200_000, 20),
    ];
    let (u, ts) = latest_utilisation(&s, Some(FIRST_READ_WINDOW_US));
    assert_eq!(ts, Some(40_000_000), "the cursor still moves to the newest");
    let got: Vec<_> = u.iter().map(|x| (x.pid, x.sm)).collect();
    assert_eq!(got, [(1, Some(60)), (3, Some(20))]);
    // Later reads (a cursor) keep every sample after it.
    assert_eq!(latest_utilisation(&s, None).0.len(), 3);
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

mod fields {
    use super::super::fields::{FieldReads, One, as_u64, one, store};
    use nvml_wrapper::enums::device::SampleValue;
    use nvml_wrapper::error::NvmlError;
    use nvml_wrapper::struct_wrappers::device::FieldValueSample;
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id::*;

    fn sample(id: u32, value: Result<SampleValue, NvmlError>) -> FieldValueSample {
        FieldValueSample {
            field: FieldId(id),
            timestamp: 0,
            latency: 0,
            value,
        }
    }

    #[test]
    fn values_of_every_type_read_as_unsigned() {
        assert_eq!(as_u64(&SampleValue::U32(7)), Some(7));
        assert_eq!(as_u64(&SampleValue::U64(1 << 40)), Some(1 << 40));
        assert_eq!(as_u64(&SampleValue::I64(3)), Some(3));
        assert_eq!(as_u64(&SampleValue::I64(-1)), None);
        assert_eq!(as_u64(&SampleValue::F64(41.6)), Some(42));
        assert_eq!(as_u64(&SampleValue::F64(f64::NAN)), None);
    }

    #[test]
    fn a_field_is_classified_as_any_call() {
        let ok = Ok(sample(NVML_FI_DEV_MEMORY_TEMP, Ok(SampleValue::U32(45))));
        assert_eq!(one(&ok), One::Value(45));
        let ns = Ok(sample(
            NVML_FI_DEV_REMAPPED_COR,
            Err(NvmlError::NotSupported),
        ));
        assert_eq!(one(&ns), One::Unsupported);
        let lost = Ok(sample(NVML_FI_DEV_REMAPPED_UNC, Err(NvmlError::GpuLost)));
        assert!(matches!(one(&lost), One::Lost(_)));
        let odd = Err(NvmlError::UnexpectedVariant(99));
        assert_eq!(one(&odd), One::Missing);
        let neg = Ok(sample(NVML_FI_DEV_MEMORY_TEMP, Ok(SampleValue::I64(-5))));
        assert_eq!(one(&neg), One::Missing);
    }

    #[test]
    fn values_land_in_their_fields_and_zero_degrees_is_no_reading() {
        let mut r = FieldReads::default();
        store(&mut r, NVML_FI_DEV_MEMORY_TEMP, 0);
        assert_eq!(r.mem_temp_c, None);
        store(&mut r, NVML_FI_DEV_MEMORY_TEMP, 51);
        store(&mut r, NVML_FI_DEV_REMAPPED_COR, 2);
        store(&mut r, NVML_FI_DEV_REMAPPED_UNC, 0);
        store(&mut r, NVML_FI_DEV_REMAPPED_FAILURE, 1);
        store(&mut r, NVML_FI_DEV_PCIE_REPLAY_COUNTER, 9);
        assert_eq!(
            r,
            FieldReads {
                mem_temp_c: Some(51),
                remapped_rows_cor: Some(2),
                remapped_rows_unc: Some(0),
                row_remap_failure: Some(true),
            }
        );
    }
}

#[test]
fn an_idle_round_skips_the_read_only_where_a_read_has_succeeded() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let mut c = UtilCursor::default();
    // Nothing read yet (or only unsupported answers): never skipped, so a
    // device without the call shows N/A, not 0 %.
    assert!(!c.skip(true, at(1)));
    assert_eq!(c.since, None);
    // The driver's clock, whatever its epoch: here 4 s at t0.
    c.read(Some(4_000_000), at(0));
    assert_eq!(c.since, Some(4_000_000));
    assert!(!c.skip(false, at(2)), "busy: read");
    assert_eq!(c.since, Some(4_000_000));
    // Idle 2 s after that read: skipped, and the next read asks for
    // samples after the skip, in the driver's clock.
    assert!(c.skip(true, at(2)));
    assert_eq!(c.since, Some(6_000_000));
    // A read with no sample keeps the cursor where it is.
    c.read(None, at(3));
    assert_eq!(c.since, Some(6_000_000));
    // A later read's sample moves it; an older one does not.
    c.read(Some(5_000_000), at(3));
    assert_eq!(c.since, Some(6_000_000));
    c.read(Some(7_000_000), at(4));
    assert_eq!(c.since, Some(7_000_000));
    assert!(c.skip(true, at(5)));
    assert_eq!(c.since, Some(8_000_000));
}

#[test]
fn a_skip_before_any_sample_leaves_the_cursor() {
    use std::time::Instant;
    let mut c = UtilCursor::default();
    // A read that found no sample (an idle device from the start): the
    // driver's clock is not known yet, so a skip asks for every sample.
    c.read(None, Instant::now());
    assert!(c.skip(true, Instant::now()));
    assert_eq!(c.since, None);
}

#[test]
fn process_utilisation_is_skipped_only_when_nothing_ran() {
    assert!(device_idle(Some((0, 0)), Some(0), Some(0)));
    // Boards without an encoder or decoder do not say: still idle.
    assert!(device_idle(Some((0, 0)), None, None));
    // Any engine busy: the processes' shares are read.
    assert!(!device_idle(Some((1, 0)), Some(0), Some(0)));
    // Copies keep the memory controller busy with no kernel running.
    assert!(!device_idle(Some((0, 3)), Some(0), Some(0)));
    assert!(!device_idle(Some((0, 0)), Some(5), None));
    assert!(!device_idle(Some((0, 0)), None, Some(5)));
    // Utilisation unknown (unsupported, or the read failed): read them.
    assert!(!device_idle(None, Some(0), Some(0)));
}
