//! Figures NVML gives only through its field-values query
//! (`nvmlDeviceGetFieldValues`, nvml-wrapper's safe `field_values_for`):
//! memory temperature and remapped rows, asked together in one call per
//! slow read. A field the device does not support is remembered, as for
//! every other call, and left out of the next queries.

use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id::{
    NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_REMAPPED_COR, NVML_FI_DEV_REMAPPED_FAILURE,
    NVML_FI_DEV_REMAPPED_UNC,
};

use super::{Field, NvmlProbe, Outcome, classify};
use crate::source::ProbeError;

/// The fields asked, with the bit that remembers their `NotSupported`.
const ASKED: [(u32, Field); 4] = [
    (NVML_FI_DEV_MEMORY_TEMP, Field::MemTemp),
    (NVML_FI_DEV_REMAPPED_COR, Field::RemapCor),
    (NVML_FI_DEV_REMAPPED_UNC, Field::RemapUnc),
    (NVML_FI_DEV_REMAPPED_FAILURE, Field::RemapFailure),
];

/// What the field-values query gave; `None` where the device did not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldReads {
    pub mem_temp_c: Option<u32>,
    pub remapped_rows_cor: Option<u64>,
    pub remapped_rows_unc: Option<u64>,
    pub row_remap_failure: Option<bool>,
}

/// One field's sample, classified as any NVML call is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum One {
    Value(u64),
    Unsupported,
    Lost(String),
    Missing,
}

/// A sample's value as an unsigned integer: a negative or non-finite one
/// is no value.
pub(crate) fn as_u64(v: &SampleValue) -> Option<u64> {
    match *v {
        SampleValue::U32(x) => Some(x.into()),
        SampleValue::U64(x) => Some(x),
        SampleValue::I64(x) => u64::try_from(x).ok(),
        SampleValue::F64(x) if x.is_finite() && x >= 0.0 => Some(x.round() as u64),
        SampleValue::F64(_) => None,
    }
}

/// Classifies one field's sample (pure, unit-tested).
pub(crate) fn one(r: &Result<FieldValueSample, NvmlError>) -> One {
    let e = match r {
        Ok(s) => match &s.value {
            Ok(v) => return as_u64(v).map_or(One::Missing, One::Value),
            Err(e) => e,
        },
        Err(e) => e,
    };
    match classify(e) {
        Outcome::Unsupported => One::Unsupported,
        Outcome::Lost => One::Lost(e.to_string()),
        Outcome::Missing => One::Missing,
    }
}

/// Puts field `id`'s value where it belongs. A memory temperature of 0 °C
/// is a board without the sensor answering, not a reading: no value.
pub(crate) fn store(out: &mut FieldReads, id: u32, v: u64) {
    match id {
        NVML_FI_DEV_MEMORY_TEMP => {
            out.mem_temp_c = u32::try_from(v).ok().filter(|&c| c > 0);
        }
        NVML_FI_DEV_REMAPPED_COR => out.remapped_rows_cor = Some(v),
        NVML_FI_DEV_REMAPPED_UNC => out.remapped_rows_unc = Some(v),
        NVML_FI_DEV_REMAPPED_FAILURE => out.row_remap_failure = Some(v != 0),
        _ => {}
    }
}

impl NvmlProbe {
    /// Memory temperature and remapped rows in one query, asking only the
    /// fields not known to be unsupported (none left: no call).
    pub(super) fn field_values(&mut self) -> Result<FieldReads, ProbeError> {
        let asked: Vec<(u32, Field)> = ASKED
            .into_iter()
            .filter(|&(_, f)| self.unsupported & f as u32 == 0)
            .collect();
        let mut out = FieldReads::default();
        if asked.is_empty() {
            return Ok(out);
        }
        let ids: Vec<FieldId> = asked.iter().map(|&(id, _)| FieldId(id)).collect();
        let samples = match self.device()?.field_values_for(&ids) {
            Ok(s) => s,
            Err(e) => {
                return match classify(&e) {
                    // No field-values query at all (an old driver): never
                    // ask again.
                    Outcome::Unsupported => {
                        for &(_, f) in &asked {
                            self.unsupported |= f as u32;
                        }
                        Ok(out)
                    }
                    Outcome::Lost => Err(self.lost(e.to_string())),
                    Outcome::Missing => Ok(out),
                };
            }
        };
        // The samples come back in the order asked.
        for (&(id, f), r) in asked.iter().zip(&samples) {
            match one(r) {
                One::Value(v) => store(&mut out, id, v),
                One::Unsupported => self.unsupported |= f as u32,
                One::Lost(reason) => return Err(self.lost(reason)),
                One::Missing => {}
            }
        }
        Ok(out)
    }
}
