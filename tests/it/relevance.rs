//! Relevance experiments end to end (so far: the synthetic dataset).

use crate::support::{Sandbox, text};

#[test]
fn synth_writes_images_and_exact_ground_truth() {
    let s = Sandbox::new();
    let out = s
        .track()
        .args([
            "relevance",
            "synth",
            "--blocks",
            "red,blue,green",
            "--states",
            "5",
            "--out",
            "blocks",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("blocks/ground_truth.json")).unwrap())
            .unwrap();
    let states = truth.as_object().unwrap();
    assert_eq!(states.len(), 5);
    for (stem, predicates) in states {
        assert!(s.path(&format!("blocks/{stem}.png")).exists());
        let p = predicates.as_object().unwrap();
        assert_eq!(p.len(), 3 * 3 + 6);
        // Every block is exactly one of: on the table, on another block, held.
        for block in ["red", "blue", "green"] {
            let placed = p[&format!("ontable({block}:block)")].as_u64().unwrap()
                + p[&format!("holding({block}:block)")].as_u64().unwrap()
                + ["red", "blue", "green"]
                    .iter()
                    .filter(|other| **other != block)
                    .map(|other| {
                        p[&format!("on({block}:block,{other}:block)")]
                            .as_u64()
                            .unwrap()
                    })
                    .sum::<u64>();
            assert_eq!(placed, 1, "{stem}: {block}");
        }
    }
    let bad = s
        .track()
        .args(["relevance", "synth", "--blocks", "red,mauve"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("unknown block colour `mauve`"));
}
