//! Line diffs, in one place: what `corral policy suggest` shows of a
//! policy's change and what `corral replay` shows of an output that
//! changed. Plain text in, lines out; escaping is the caller's (the
//! inputs may be a guest's).

/// Most cells of the longest-common-subsequence table a diff builds:
/// 4 Mi (16 MiB of memory). Past it, the lines the two texts share at
/// their start and end are kept and everything between is shown removed
/// and added.
pub const MAX_DIFF_CELLS: usize = 4 << 20;

/// A line diff of `old` and `new`: each line of either, prefixed `"  "`
/// (in both), `"- "` (only in `old`) or `"+ "` (only in `new`), in order.
pub fn line_diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // The common start and end cost nothing to find.
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<String> = a[..head].iter().map(|l| format!("  {l}")).collect();
    if (mid_a.len() + 1).saturating_mul(mid_b.len() + 1) > MAX_DIFF_CELLS {
        out.extend(mid_a.iter().map(|l| format!("- {l}")));
        out.extend(mid_b.iter().map(|l| format!("+ {l}")));
    } else {
        out.extend(lcs_diff(mid_a, mid_b));
    }
    out.extend(a[a.len() - tail..].iter().map(|l| format!("  {l}")));
    out
}

fn lcs_diff(a: &[&str], b: &[&str]) -> Vec<String> {
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * width + j] = if a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len()
            && (j == b.len() || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
        {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_removed_and_added_between_shared_ones() {
        let diff = line_diff("a\nb\nc\nd", "a\nB\nc\nd\ne");
        assert_eq!(diff, ["  a", "- b", "+ B", "  c", "  d", "+ e"]);
    }

    #[test]
    fn a_huge_middle_is_shown_whole_without_the_table() {
        let old: String = (0..3000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("x{i}\n")).collect();
        let diff = line_diff(&format!("top\n{old}end"), &format!("top\n{new}end"));
        assert_eq!(diff.first().map(String::as_str), Some("  top"));
        assert_eq!(diff.last().map(String::as_str), Some("  end"));
        assert_eq!(diff.iter().filter(|l| l.starts_with("- ")).count(), 3000);
        assert_eq!(diff.iter().filter(|l| l.starts_with("+ ")).count(), 3000);
    }
}
