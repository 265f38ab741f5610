//! The dependency graph of a plan: steps are nodes, a `$ref` from step B to
//! step A is an edge A -> B. Kahn's algorithm sorts it into waves (the
//! tool-planning guide's rule: wave 0 has no dependencies, wave N depends
//! only on waves before it);
//! whatever Kahn cannot place lies on or behind a cycle.

use std::collections::BTreeSet;

/// A plan's steps and their dependencies, by index in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    ids: Vec<String>,
    /// `deps[i]`: the steps step `i` references, deduplicated, sorted.
    deps: Vec<BTreeSet<usize>>,
}

impl Graph {
    /// A graph over `ids` with `deps[i]` the indexes step `i` depends on.
    pub fn new(ids: Vec<String>, deps: Vec<BTreeSet<usize>>) -> Self {
        Self { ids, deps }
    }

    /// The step ids, in plan order.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// What step `i` depends on.
    pub fn deps(&self, i: usize) -> &BTreeSet<usize> {
        &self.deps[i]
    }

    /// Kahn's algorithm by levels. `Ok(waves)` with step indexes in plan order
    /// within each wave, or `Err(cycle)` with the ids of one cycle, in order,
    /// first id repeated at the end (`a -> b -> a`).
    pub fn waves(&self) -> Result<Vec<Vec<usize>>, Vec<String>> {
        let n = self.ids.len();
        let mut remaining: Vec<usize> = self.deps.iter().map(BTreeSet::len).collect();
        let mut placed = vec![false; n];
        let mut waves = Vec::new();
        let mut ready: Vec<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
        while !ready.is_empty() {
            for &i in &ready {
                placed[i] = true;
            }
            let mut next = Vec::new();
            for j in 0..n {
                if placed[j] || remaining[j] == 0 {
                    continue;
                }
                let done = self.deps[j].iter().filter(|d| ready.contains(d)).count();
                remaining[j] -= done;
                if remaining[j] == 0 {
                    next.push(j);
                }
            }
            waves.push(std::mem::replace(&mut ready, next));
        }
        if placed.iter().all(|&p| p) {
            Ok(waves)
        } else {
            Err(self.find_cycle(&placed))
        }
    }

    /// Follows unplaced dependencies from an unplaced step until one repeats.
    fn find_cycle(&self, placed: &[bool]) -> Vec<String> {
        let start = placed.iter().position(|&p| !p).unwrap_or(0);
        let mut path = vec![start];
        let mut current = start;
        loop {
            let Some(&next) = self.deps[current].iter().find(|&&d| !placed[d]) else {
                return path.iter().map(|&i| self.ids[i].clone()).collect();
            };
            if let Some(pos) = path.iter().position(|&p| p == next) {
                // The cycle is path[pos..], each step feeding the one before it;
                // show it in data-flow order, starting from its first step in
                // plan order.
                let mut cycle: Vec<usize> = path[pos..].iter().rev().copied().collect();
                let first = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
                cycle.rotate_left(first);
                cycle.push(cycle[0]);
                return cycle.iter().map(|&i| self.ids[i].clone()).collect();
            }
            path.push(next);
            current = next;
        }
    }

    /// A Graphviz DOT rendering: one node per step labelled `id\ntool`, one
    /// edge per dependency, and steps of the same wave on the same rank.
    pub fn to_dot(&self, tools: &[String], waves: &[Vec<usize>]) -> String {
        let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph plan {\n  rankdir=LR;\n  node [shape=box];\n");
        for (i, id) in self.ids.iter().enumerate() {
            let label = format!("{id}\\n{}", tools.get(i).map(String::as_str).unwrap_or(""));
            out.push_str(&format!(
                "  {} [label=\"{}\"];\n",
                quote(id),
                label.replace('"', "\\\"")
            ));
        }
        for (i, deps) in self.deps.iter().enumerate() {
            for &d in deps {
                out.push_str(&format!(
                    "  {} -> {};\n",
                    quote(&self.ids[d]),
                    quote(&self.ids[i])
                ));
            }
        }
        for (w, wave) in waves.iter().enumerate() {
            let members: Vec<String> = wave.iter().map(|&i| quote(&self.ids[i])).collect();
            out.push_str(&format!(
                "  subgraph wave_{w} {{ rank=same; {} }}\n",
                members.join("; ")
            ));
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        let ids: Vec<String> = edges.iter().map(|(id, _)| id.to_string()).collect();
        let deps = edges
            .iter()
            .map(|(_, ds)| {
                ds.iter()
                    .map(|d| ids.iter().position(|i| i == d).expect("id"))
                    .collect()
            })
            .collect();
        Graph::new(ids, deps)
    }

    #[test]
    fn waves_by_level() {
        let g = graph(&[
            ("a", &[]),
            ("b", &[]),
            ("c", &[]),
            ("summary", &["a", "b", "c"]),
        ]);
        assert_eq!(g.waves(), Ok(vec![vec![0, 1, 2], vec![3]]));
        let g = graph(&[("c", &["b"]), ("b", &["a"]), ("a", &[]), ("d", &["a", "c"])]);
        assert_eq!(g.waves(), Ok(vec![vec![2], vec![1], vec![0], vec![3]]));
    }

    #[test]
    fn cycles_are_named() {
        let g = graph(&[("a", &["b"]), ("b", &["a"]), ("c", &[])]);
        assert_eq!(g.waves(), Err(vec!["a".into(), "b".into(), "a".into()]));
        let g = graph(&[("x", &[]), ("self", &["self"])]);
        assert_eq!(g.waves(), Err(vec!["self".into(), "self".into()]));
        // A step behind a cycle is not itself on it.
        let g = graph(&[("p", &["q"]), ("q", &["r"]), ("r", &["q"])]);
        let cycle = g.waves().unwrap_err();
        assert!(
            cycle == ["q", "r", "q"] || cycle == ["r", "q", "r"],
            "{cycle:?}"
        );
    }

    #[test]
    fn dot_has_nodes_edges_and_ranks() {
        let g = graph(&[("a", &[]), ("b", &["a"])]);
        let dot = g.to_dot(&["t1".into(), "t2".into()], &g.waves().expect("acyclic"));
        assert!(dot.starts_with("digraph plan {"));
        assert!(dot.contains("\"a\" -> \"b\";"));
        assert!(dot.contains("subgraph wave_1 { rank=same; \"b\" }"));
    }
}
