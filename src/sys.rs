//! The only place with `unsafe`: thin wrappers over setsockopt/ioctl that the
//! socket2 and std APIs do not cover. Each wrapper says why it is sound.

use std::io;

/// Sends SIGKILL to every process in process group `pgid` (an exec check's
/// script and its children when the check times out). Refuses pgid 0 and 1:
/// kill(0) and kill(-1) would hit our own group or every process.
pub fn kill_process_group(pgid: u32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad process group"))?;
    // SAFETY: kill(2) takes two integers and reads no memory of ours.
    let r = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
