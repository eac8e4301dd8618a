//! Synthetic blocks-world scenes: random states (stacks on a table, maybe one held block, one
//! colour per block), rendered as PNG, with their exact ground truth, so anyone can run a
//! relevance experiment without a dataset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use image::{Rgb, RgbImage};
use rand::{Rng, SeedableRng};

use super::RelevanceError;
use super::predicates::Predicate;

/// Colours a block can have, by name.
pub const COLOURS: [(&str, [u8; 3]); 10] = [
    ("red", [220, 40, 40]),
    ("blue", [40, 70, 220]),
    ("green", [40, 170, 60]),
    ("cyan", [40, 200, 210]),
    ("yellow", [235, 210, 40]),
    ("magenta", [210, 50, 200]),
    ("orange", [245, 140, 30]),
    ("purple", [120, 60, 170]),
    ("brown", [130, 85, 45]),
    ("black", [20, 20, 20]),
];

/// A blocks-world state: stacks bottom to top, and the block in the arm, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub stacks: Vec<Vec<String>>,
    pub held: Option<String>,
}

impl State {
    /// A random state of `blocks`: maybe one held (one time in four), the rest in stacks.
    pub(crate) fn random(blocks: &[String], rng: &mut impl Rng) -> Self {
        let mut order: Vec<String> = blocks.to_vec();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let held = (!order.is_empty() && rng.random_range(0..4) == 0).then(|| order.remove(0));
        let mut stacks: Vec<Vec<String>> = Vec::new();
        for block in order {
            // Start a new stack, or put the block on top of an existing one.
            let choice = rng.random_range(0..=stacks.len());
            match stacks.get_mut(choice) {
                Some(stack) => stack.push(block),
                None => stacks.push(vec![block]),
            }
        }
        Self { stacks, held }
    }

    /// The same state with its stacks in a fixed order: states that differ only in where
    /// their stacks stand have the same truth, so they are one state.
    fn canonical(&self) -> Self {
        let mut stacks = self.stacks.clone();
        stacks.sort();
        Self {
            stacks,
            held: self.held.clone(),
        }
    }

    /// Every distinct state of `blocks` (no held block, or each one held), each once.
    fn all(blocks: &[String]) -> Vec<Self> {
        let mut all = Vec::new();
        for stacks in arrangements(blocks) {
            all.push(Self { stacks, held: None });
        }
        for (i, held) in blocks.iter().enumerate() {
            let mut rest = blocks.to_vec();
            rest.remove(i);
            for stacks in arrangements(&rest) {
                all.push(Self {
                    stacks,
                    held: Some(held.clone()),
                });
            }
        }
        all
    }

    /// The truth of every predicate over `blocks` in this state.
    pub(crate) fn truth(&self, blocks: &[String]) -> BTreeMap<Predicate, bool> {
        let mut truth: BTreeMap<Predicate, bool> = Predicate::all(blocks)
            .into_iter()
            .map(|p| (p, false))
            .collect();
        for stack in &self.stacks {
            if let Some(bottom) = stack.first() {
                truth.insert(Predicate::ontable(bottom), true);
            }
            if let Some(top) = stack.last() {
                truth.insert(Predicate::clear(top), true);
            }
            for pair in stack.windows(2) {
                truth.insert(Predicate::on(&pair[1], &pair[0]), true);
            }
        }
        if let Some(held) = &self.held {
            truth.insert(Predicate::holding(held), true);
        }
        truth
    }

    /// The state drawn: a table along the bottom, stacks of squares, the held block under a
    /// gripper at the top.
    pub fn render(&self) -> Result<RgbImage, RelevanceError> {
        const BLOCK: u32 = 40;
        const GAP: u32 = 16;
        let width = (GAP + (BLOCK + GAP) * self.stacks.len().max(3) as u32).max(240);
        let tallest = self.stacks.iter().map(Vec::len).max().unwrap_or(0) as u32;
        let height = 120 + BLOCK * tallest.max(2);
        let mut img = RgbImage::from_pixel(width, height, Rgb([250, 250, 250]));
        let table_top = height - 20;
        fill(&mut img, 0, table_top, width, 20, [120, 110, 100]);
        for (i, stack) in self.stacks.iter().enumerate() {
            let x = GAP + i as u32 * (BLOCK + GAP);
            for (level, block) in stack.iter().enumerate() {
                let y = table_top - (level as u32 + 1) * BLOCK;
                draw_block(&mut img, x, y, BLOCK, colour(block)?);
            }
        }
        if let Some(held) = &self.held {
            let x = width - BLOCK - GAP;
            fill(&mut img, x + BLOCK / 2 - 2, 0, 4, 20, [60, 60, 60]);
            fill(&mut img, x - 4, 20, BLOCK + 8, 4, [60, 60, 60]);
            draw_block(&mut img, x, 26, BLOCK, colour(held)?);
        }
        Ok(img)
    }
}

/// The RGB of a colour name.
pub(crate) fn colour(name: &str) -> Result<[u8; 3], RelevanceError> {
    COLOURS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, rgb)| *rgb)
        .ok_or_else(|| RelevanceError::Colour {
            name: name.to_owned(),
            known: COLOURS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Every way to stack `blocks` on a table (a set of non-empty stacks, bottom to top), each
/// once: each block in turn goes into an existing stack at any height, or starts a new one.
fn arrangements(blocks: &[String]) -> Vec<Vec<Vec<String>>> {
    let mut all: Vec<Vec<Vec<String>>> = vec![Vec::new()];
    for block in blocks {
        let mut next = Vec::new();
        for stacks in &all {
            for (s, stack) in stacks.iter().enumerate() {
                for height in 0..=stack.len() {
                    let mut grown = stacks.clone();
                    grown[s].insert(height, block.clone());
                    next.push(grown);
                }
            }
            let mut grown = stacks.clone();
            grown.push(vec![block.clone()]);
            next.push(grown);
        }
        all = next;
    }
    all
}

/// How many distinct states `n` blocks have: L(n) + n·L(n-1), with L the number of ways to
/// stack n blocks (1, 1, 3, 13, 73, 501, …: OEIS A000262). `None` past `u64`.
pub(crate) fn distinct_states(n: usize) -> Option<u64> {
    // L(k) = (2k - 1) L(k-1) - (k-1)(k-2) L(k-2).
    let mut stackings: Vec<u64> = vec![1, 1];
    for k in 2..=n as u64 {
        let a = (2 * k - 1).checked_mul(stackings[k as usize - 1])?;
        let b = ((k - 1) * (k - 2)).checked_mul(stackings[k as usize - 2])?;
        stackings.push(a.checked_sub(b)?);
    }
    let held = if n == 0 {
        0
    } else {
        (n as u64).checked_mul(stackings[n - 1])?
    };
    stackings[n].checked_add(held)
}

/// Drawing all states to pick from beats drawing at random up to this many states.
const ENUMERATED_STATES: u64 = 20_000;

/// `count` distinct states of `blocks`, in a seeded random order: drawn without replacement.
fn distinct_random_states(
    blocks: &[String],
    count: usize,
    rng: &mut impl Rng,
) -> Result<Vec<State>, RelevanceError> {
    let total = distinct_states(blocks.len());
    if let Some(total) = total.filter(|&t| (count as u64) > t) {
        return Err(RelevanceError::TooManyStates {
            asked: count,
            blocks: blocks.len(),
            exist: total,
        });
    }
    if total.is_some_and(|t| t <= ENUMERATED_STATES) {
        let mut all = State::all(blocks);
        for i in (1..all.len()).rev() {
            all.swap(i, rng.random_range(0..=i));
        }
        all.truncate(count);
        return Ok(all);
    }
    // Far more states than asked for: redraw the rare repeat.
    let mut seen = std::collections::HashSet::new();
    let mut states = Vec::with_capacity(count);
    while states.len() < count {
        let state = State::random(blocks, rng);
        if seen.insert(format!("{:?}", state.canonical())) {
            states.push(state);
        }
    }
    Ok(states)
}

/// Paints a `w` × `h` rectangle at (`x`, `y`), clipped to the image.
pub(super) fn fill(img: &mut RgbImage, x: u32, y: u32, w: u32, h: u32, rgb: [u8; 3]) {
    for yy in y..(y + h).min(img.height()) {
        for xx in x..(x + w).min(img.width()) {
            img.put_pixel(xx, yy, Rgb(rgb));
        }
    }
}

fn draw_block(img: &mut RgbImage, x: u32, y: u32, size: u32, rgb: [u8; 3]) {
    fill(img, x, y, size, size, [30, 30, 30]);
    fill(img, x + 2, y + 2, size - 4, size - 4, rgb);
}

/// Writes `states` distinct random scenes of blocks of `colours` to `out` as
/// `state_NNNN.png`, and their ground truth as `ground_truth.json` (image stem -> predicate ->
/// 0/1). States are drawn without replacement; asking for more than exist is an error naming
/// how many do. Seeded: the same arguments give the same files. Returns the written paths.
pub(crate) fn synthesize(
    colours: &[String],
    states: usize,
    seed: u64,
    out: &Path,
) -> Result<Vec<PathBuf>, RelevanceError> {
    for c in colours {
        colour(c)?;
    }
    let mut unique = colours.to_vec();
    unique.sort();
    unique.dedup();
    if unique.len() != colours.len() || colours.is_empty() {
        return Err(RelevanceError::Colours);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let drawn = distinct_random_states(colours, states, &mut rng)?;
    let mut scenes = Vec::with_capacity(drawn.len());
    for state in drawn {
        scenes.push((state.render()?, state.truth(colours)));
    }
    write_scenes(out, scenes)
}

/// Writes scenes into `out` as `state_NNNN.png`, in order, with their ground truth in
/// `ground_truth.json` (image stem -> predicate -> 0/1). Returns the written paths.
pub(super) fn write_scenes(
    out: &Path,
    scenes: Vec<(RgbImage, BTreeMap<Predicate, bool>)>,
) -> Result<Vec<PathBuf>, RelevanceError> {
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RelevanceError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(write_error(out))?;
    let mut truth_file = serde_json::Map::new();
    let mut written = Vec::new();
    for (n, (image, truth)) in scenes.into_iter().enumerate() {
        let stem = format!("state_{n:04}");
        let path = out.join(format!("{stem}.png"));
        image
            .save(&path)
            .map_err(|e| write_error(&path)(std::io::Error::other(e)))?;
        let truth: serde_json::Map<String, serde_json::Value> = truth
            .into_iter()
            .map(|(p, t)| (p.to_string(), serde_json::Value::from(u8::from(t))))
            .collect();
        truth_file.insert(stem, serde_json::Value::Object(truth));
        written.push(path);
    }
    let truth_path = out.join("ground_truth.json");
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(truth_file))
        .map_err(|e| write_error(&truth_path)(std::io::Error::other(e)))?;
    std::fs::write(&truth_path, text + "\n").map_err(write_error(&truth_path))?;
    written.push(truth_path);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> Vec<String> {
        ["red", "blue", "green", "cyan"].map(String::from).to_vec()
    }

    #[test]
    fn states_are_distinct_and_counted() {
        let three: Vec<String> = ["red", "blue", "green"].map(String::from).to_vec();
        // 13 ways to stack 3 blocks, and 3 x 3 with one of them held.
        assert_eq!(distinct_states(3), Some(22));
        assert_eq!(distinct_states(4), Some(73 + 4 * 13));
        let all = State::all(&three);
        assert_eq!(all.len(), 22);
        let unique: std::collections::HashSet<String> =
            all.iter().map(|s| format!("{:?}", s.canonical())).collect();
        assert_eq!(unique.len(), 22, "every state once");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let six = distinct_random_states(&three, 6, &mut rng).unwrap();
        let truths: std::collections::HashSet<String> = six
            .iter()
            .map(|s| format!("{:?}", s.truth(&three)))
            .collect();
        assert_eq!(truths.len(), 6, "six states, six scenes");
        let too_many = distinct_random_states(&three, 23, &mut rng).unwrap_err();
        assert_eq!(
            too_many.to_string(),
            "23 states were asked for, but 3 blocks have only 22 distinct states: ask for \
             fewer, or add blocks (--blocks)"
        );
    }

    #[test]
    fn ground_truth_follows_the_state() {
        let state = State {
            stacks: vec![vec!["red".into(), "blue".into()], vec!["green".into()]],
            held: Some("cyan".into()),
        };
        let t = state.truth(&blocks());
        let is = |p: &str| t[&p.parse::<Predicate>().unwrap()];
        assert!(is("on(blue:block,red:block)") && !is("on(red:block,blue:block)"));
        assert!(
            is("ontable(red:block)") && is("ontable(green:block)") && !is("ontable(blue:block)")
        );
        assert!(is("clear(blue:block)") && is("clear(green:block)") && !is("clear(red:block)"));
        assert!(
            is("holding(cyan:block)") && !is("clear(cyan:block)") && !is("ontable(cyan:block)")
        );
        assert_eq!(t.values().filter(|v| **v).count(), 6);
    }

    #[test]
    fn random_states_hold_every_block_once() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            let s = State::random(&blocks(), &mut rng);
            let mut seen: Vec<String> = s.stacks.concat();
            seen.extend(s.held.clone());
            seen.sort();
            let mut want = blocks();
            want.sort();
            assert_eq!(seen, want);
            let img = s.render().unwrap();
            assert!(img.width() >= 240 && img.height() >= 200);
        }
    }

    #[test]
    fn synthesis_writes_images_and_truth_reproducibly() {
        let dir = tempfile::tempdir().unwrap();
        let files = synthesize(&blocks(), 3, 42, dir.path()).unwrap();
        assert_eq!(files.len(), 4);
        let truth: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("ground_truth.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(truth["state_0002"].as_object().unwrap().len(), 4 * 3 + 12);
        let png = std::fs::read(dir.path().join("state_0000.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let again = tempfile::tempdir().unwrap();
        synthesize(&blocks(), 3, 42, again.path()).unwrap();
        assert_eq!(
            std::fs::read(again.path().join("state_0001.png")).unwrap(),
            std::fs::read(dir.path().join("state_0001.png")).unwrap()
        );
        assert!(synthesize(&["red".into(), "red".into()], 1, 1, dir.path()).is_err());
        assert!(
            synthesize(&["mauve".into()], 1, 1, dir.path())
                .unwrap_err()
                .to_string()
                .contains("unknown block colour `mauve`")
        );
    }
}
