//! Argument parsing shared by the sweep examples (mmsweep, mmsplit).

/// the comma-separated values of `key=v1,v2,...` among args, or `[default]`
pub fn list(args: &[String], key: &str, default: usize) -> Vec<usize> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("{key}=")))
        .map_or(vec![default], |v| {
            v.split(',').map(|x| x.parse().unwrap()).collect()
        })
}
