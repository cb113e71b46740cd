//! "Did you mean ...?" for misspelt names (protocols, variants, checkers, fields), by
//! string similarity from the `strsim` crate (the one clap uses for the same purpose).

/// The candidate closest to `name`, if one is close enough to be a likely typo
/// (Jaro-Winkler similarity of 0.8 or more, which favours a shared beginning).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// `"; did you mean `x`?"` when a candidate is close to `name`, else empty.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match closest(name, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_find_none() {
        let names = ["raft", "bully", "redis-lock", "redlock"];
        assert_eq!(closest("rafft", names), Some("raft"));
        assert_eq!(closest("redlok", names), Some("redlock"));
        assert_eq!(closest("zookeeper", names), None);
        assert_eq!(
            closest("no-fence", ["correct", "no-fencing"]),
            Some("no-fencing")
        );
        assert_eq!(did_you_mean("buly", names), "; did you mean `bully`?");
        assert_eq!(did_you_mean("paxos", names), "");
    }
}
