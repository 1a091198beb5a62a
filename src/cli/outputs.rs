//! Checks on the files a command is asked to write.

use std::path::Path;

use super::Usage;

/// A usage error when the output `path` is one of the recordings being
/// read (the same file, by device and inode, whatever the names): writing
/// it would replace the recording. `flag` names the option (`-o`, `--svg`).
pub fn not_an_input(path: &Path, inputs: &[&Path], flag: &str) -> Result<(), Usage> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(out) = std::fs::metadata(path) else {
        return Ok(());
    };
    let same = |i: &&Path| {
        std::fs::metadata(i).is_ok_and(|m| (m.dev(), m.ino()) == (out.dev(), out.ino()))
    };
    if inputs.iter().any(same) {
        return Err(Usage(format!(
            "{flag} {}: is the recording being read; give another file name",
            crate::sanitize::path(path)
        )));
    }
    Ok(())
}
