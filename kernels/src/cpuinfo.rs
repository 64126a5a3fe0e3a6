//! The CPU's data caches, read once, for matmul's blocking (`matmul::Blocking::derive`).
//!
//! std only. x86-64: CPUID's deterministic cache leaves (leaf 4 on Intel, 0x8000001D on
//! AMD / Hygon with TOPOEXT), which give size, ways, line and how many logical CPUs share
//! each cache. Else (other CPUs, a hypervisor hiding the leaves, aarch64) Linux's sysfs
//! (/sys/devices/system/cpu/cpu0/cache/index*). Else `DEFAULT`. A level a source does not
//! report is taken from `DEFAULT`, and `source` says where the figures came from.

use std::sync::OnceLock;

/// one cache level as seen by one core
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cache {
    /// bytes
    pub size: usize,
    /// associativity (ways); a fully associative cache counts as size / line ways
    pub ways: usize,
    /// line size in bytes
    pub line: usize,
    /// logical CPUs sharing this cache (1 for a private one)
    pub shared_by: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caches {
    pub l1d: Cache,
    pub l2: Cache,
    /// none on CPUs without a third level (many Arm cores)
    pub l3: Option<Cache>,
    /// "cpuid", "sysfs", "defaults" (+ "+defaults" when a level was missing)
    pub source: &'static str,
}

/// A typical current x86 core (32 KiB 8-way L1d, 512 KiB 8-way L2, a 16 MiB L3 shared by 8).
pub const DEFAULT: Caches = Caches {
    l1d: Cache {
        size: 32 << 10,
        ways: 8,
        line: 64,
        shared_by: 1,
    },
    l2: Cache {
        size: 512 << 10,
        ways: 8,
        line: 64,
        shared_by: 1,
    },
    l3: Some(Cache {
        size: 16 << 20,
        ways: 16,
        line: 64,
        shared_by: 8,
    }),
    source: "defaults",
};

/// The caches of this machine (detected on the first call).
pub fn caches() -> Caches {
    static C: OnceLock<Caches> = OnceLock::new();
    *C.get_or_init(detect)
}

fn detect() -> Caches {
    #[cfg(target_arch = "x86_64")]
    if let Some(c) = complete(&x86::levels(), "cpuid", "cpuid+defaults") {
        return c;
    }
    #[cfg(target_os = "linux")]
    if let Some(c) = complete(
        &sysfs_levels("/sys/devices/system/cpu/cpu0/cache"),
        "sysfs",
        "sysfs+defaults",
    ) {
        return c;
    }
    DEFAULT
}

/// (level, cache) pairs of data / unified caches -> Caches, or None if L1d and L2 are
/// both missing (then the source is no use)
fn complete(levels: &[(u32, Cache)], full: &'static str, partial: &'static str) -> Option<Caches> {
    let find = |lvl| levels.iter().find(|(l, _)| *l == lvl).map(|(_, c)| *c);
    let (l1, l2, l3) = (find(1), find(2), find(3));
    if l1.is_none() && l2.is_none() {
        return None;
    }
    let source = if l1.is_some() && l2.is_some() {
        full
    } else {
        partial
    };
    Some(Caches {
        l1d: l1.unwrap_or(DEFAULT.l1d),
        l2: l2.unwrap_or(DEFAULT.l2),
        l3,
        source,
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Cache;
    use core::arch::x86_64::{__cpuid_count, CpuidResult};

    // __cpuid_count is a safe fn from Rust 1.94 on and unsafe before (rust-version 1.89)
    #[allow(unused_unsafe)]
    fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
        // SAFETY: CPUID exists on every x86-64 CPU
        unsafe { __cpuid_count(leaf, sub) }
    }

    /// the data / unified caches from the deterministic cache parameters leaf
    pub fn levels() -> Vec<(u32, Cache)> {
        let v = cpuid(0, 0);
        let vendor: Vec<u8> = [v.ebx, v.edx, v.ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let leaf = match &vendor[..] {
            b"GenuineIntel" if v.eax >= 4 => 4,
            b"AuthenticAMD" | b"HygonGenuine" => {
                let ext = cpuid(0x8000_0000, 0).eax;
                let topoext = ext >= 0x8000_0001 && cpuid(0x8000_0001, 0).ecx & (1 << 22) != 0;
                if ext >= 0x8000_001D && topoext {
                    0x8000_001D
                } else {
                    return vec![];
                }
            }
            _ => return vec![],
        };
        let mut out = vec![];
        for sub in 0..16 {
            let r = cpuid(leaf, sub);
            let kind = r.eax & 0x1f; // 0 none, 1 data, 2 instruction, 3 unified
            if kind == 0 {
                break;
            }
            if kind == 2 {
                continue;
            }
            let level = (r.eax >> 5) & 7;
            let line = (r.ebx & 0xfff) as usize + 1;
            let parts = ((r.ebx >> 12) & 0x3ff) as usize + 1;
            let sets = r.ecx as usize + 1;
            let fully = r.eax & (1 << 9) != 0;
            let ways = if fully {
                sets
            } else {
                (r.ebx >> 22) as usize + 1
            };
            let size = ways * parts * line * if fully { 1 } else { sets };
            let shared_by = ((r.eax >> 14) & 0xfff) as usize + 1;
            let cache = Cache {
                size,
                ways,
                line,
                shared_by,
            };
            super::add_level(&mut out, level, cache);
        }
        out
    }
}

/// Keep the first non-empty description of each cache level.
fn add_level(out: &mut Vec<(u32, Cache)>, level: u32, cache: Cache) {
    if cache.size > 0 && !out.iter().any(|(l, _)| *l == level) {
        out.push((level, cache));
    }
}

/// "32K", "1M", "32768K", "1024" -> bytes
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, mul) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<usize>().ok().map(|v| v * mul)
}

/// how many CPUs a sysfs cpu list names: "0-1" -> 2, "0,2-3" -> 3
pub fn count_cpu_list(s: &str) -> usize {
    s.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum::<usize>()
        .max(1)
}

/// the data / unified caches sysfs lists under `base` (cpu0's cache folder)
pub fn sysfs_levels(base: &str) -> Vec<(u32, Cache)> {
    let read = |idx: usize, f: &str| std::fs::read_to_string(format!("{base}/index{idx}/{f}")).ok();
    let mut out = vec![];
    for idx in 0..16 {
        let Some(kind) = read(idx, "type") else { break };
        if kind.trim() == "Instruction" {
            continue;
        }
        let level = read(idx, "level").and_then(|s| s.trim().parse::<u32>().ok());
        let size = read(idx, "size").and_then(|s| parse_size(&s));
        let (Some(level), Some(size)) = (level, size) else {
            continue;
        };
        let num = |f: &str, d: usize| {
            read(idx, f)
                .and_then(|s| s.trim().parse::<usize>().ok())
                .filter(|&v| v > 0)
                .unwrap_or(d)
        };
        let line = num("coherency_line_size", 64);
        let ways = num("ways_of_associativity", 8);
        let shared_by = read(idx, "shared_cpu_list").map_or(1, |s| count_cpu_list(&s));
        let cache = Cache {
            size,
            ways,
            line,
            shared_by,
        };
        add_level(&mut out, level, cache);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_sizes_and_cpu_lists() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
        assert_eq!(count_cpu_list("0-1\n"), 2);
        assert_eq!(count_cpu_list("0,2-3"), 3);
        assert_eq!(count_cpu_list("5"), 1);
    }

    #[test]
    fn detected_caches_are_plausible() {
        let c = caches();
        assert!(c.l1d.size >= 4 << 10 && c.l1d.size <= c.l2.size, "{c:?}");
        assert!(c.l1d.ways >= 1 && c.l1d.line >= 16, "{c:?}");
        if let Some(l3) = c.l3 {
            assert!(l3.size >= c.l2.size && l3.shared_by >= 1, "{c:?}");
        }
    }

    #[test]
    fn a_missing_level_comes_from_the_defaults() {
        let l2 = Cache {
            size: 1 << 20,
            ways: 16,
            line: 64,
            shared_by: 1,
        };
        let c = complete(&[(2, l2)], "x", "x+defaults").unwrap();
        assert_eq!(
            (c.l1d, c.l2, c.l3, c.source),
            (DEFAULT.l1d, l2, None, "x+defaults")
        );
        assert_eq!(complete(&[], "x", "y"), None);
    }
}
