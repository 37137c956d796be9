//! The `babel` binary: see `babel --help`.

mod cli;

fn main() -> std::process::ExitCode {
    keep_freed_memory();
    cli::main()
}

/// glibc gives a freed block of more than 128 KiB back to the kernel at once (the bound
/// grows to 32 MiB as it sees such blocks) and trims the top of the heap beyond 128 KiB
/// free, so the next page buffer, batch or compressor output of the same size faults in
/// fresh zeroed pages and unmapping them interrupts the other core to flush its TLB: a
/// sixth of the CPU of an import of small records was the kernel's. Blocks under 16 MiB
/// now come from the heap, and the heap keeps up to 64 MiB free (BENCHMARKS.md, "Heap").
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MMAP_THRESHOLD: libc::c_int = 16 << 20;
        const TRIM_THRESHOLD: libc::c_int = 64 << 20;
        // SAFETY: mallopt only sets two parameters of glibc's allocator, under the
        // allocator's own lock, before any other thread of ours exists.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        }
    }
}
