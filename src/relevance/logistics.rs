//! Synthetic scenes of a second planning domain, logistics: trucks at places, packages on the
//! ground at a place or loaded in a truck, with their exact ground truth over `at` and `in`.
//! It shows (and its test checks) that relevance experiments work beyond blocks-world.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use image::{Rgb, RgbImage};
use rand::{Rng, SeedableRng};

use super::RelevanceError;
use super::predicates::Predicate;
use super::synth::fill;

/// The places, left to right, with the colour of their ground.
const PLACES: [(&str, [u8; 3]); 3] = [
    ("depot", [150, 150, 150]),
    ("market", [120, 190, 110]),
    ("port", [110, 150, 215]),
];
/// The trucks and their colours.
const TRUCKS: [(&str, [u8; 3]); 2] = [("truck_red", [215, 45, 45]), ("truck_black", [35, 35, 35])];
/// The packages and their colours.
const PACKAGES: [(&str, [u8; 3]); 3] = [
    ("pkg_yellow", [240, 205, 30]),
    ("pkg_purple", [130, 60, 180]),
    ("pkg_orange", [245, 135, 25]),
];

/// Where a package is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Load {
    /// On the ground at a place (an index into `PLACES`).
    At(usize),
    /// In a truck (an index into `TRUCKS`).
    In(usize),
}

/// A logistics state: each truck's place, each package's whereabouts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    trucks: [usize; TRUCKS.len()],
    packages: [Load; PACKAGES.len()],
}

impl State {
    fn random(rng: &mut impl Rng) -> Self {
        let trucks = std::array::from_fn(|_| rng.random_range(0..PLACES.len()));
        let packages = std::array::from_fn(|_| {
            if rng.random_range(0..2) == 0 {
                Load::In(rng.random_range(0..TRUCKS.len()))
            } else {
                Load::At(rng.random_range(0..PLACES.len()))
            }
        });
        Self { trucks, packages }
    }

    /// Every `at` and `in` predicate over the domain's objects, true or false (closed world).
    fn truth(&self) -> BTreeMap<Predicate, bool> {
        let mut truth = BTreeMap::new();
        let at = |object: &str, kind: &str, place: &str| {
            format!("at({object}:{kind},{place}:place)").parse::<Predicate>()
        };
        for (t, (truck, _)) in TRUCKS.iter().enumerate() {
            for (p, (place, _)) in PLACES.iter().enumerate() {
                if let Ok(predicate) = at(truck, "truck", place) {
                    truth.insert(predicate, self.trucks[t] == p);
                }
            }
        }
        for (k, (package, _)) in PACKAGES.iter().enumerate() {
            for (p, (place, _)) in PLACES.iter().enumerate() {
                if let Ok(predicate) = at(package, "package", place) {
                    truth.insert(predicate, self.packages[k] == Load::At(p));
                }
            }
            for (t, (truck, _)) in TRUCKS.iter().enumerate() {
                let text = format!("in({package}:package,{truck}:truck)");
                if let Ok(predicate) = text.parse::<Predicate>() {
                    truth.insert(predicate, self.packages[k] == Load::In(t));
                }
            }
        }
        truth
    }

    /// The scene: three grounds side by side, trucks standing on theirs with their loads on
    /// the bed, packages on the ground beside them.
    fn render(&self) -> RgbImage {
        const PLACE_W: u32 = 200;
        const HEIGHT: u32 = 220;
        const GROUND: u32 = 170;
        let mut img = RgbImage::from_pixel(PLACE_W * PLACES.len() as u32, HEIGHT, Rgb([250; 3]));
        for (p, (_, rgb)) in PLACES.iter().enumerate() {
            fill(
                &mut img,
                p as u32 * PLACE_W + 4,
                GROUND,
                PLACE_W - 8,
                HEIGHT - GROUND,
                *rgb,
            );
        }
        // Each place has two truck bays and a row of ground slots.
        for (t, (_, rgb)) in TRUCKS.iter().enumerate() {
            let x = self.trucks[t] as u32 * PLACE_W + 10 + t as u32 * 95;
            fill(&mut img, x, GROUND - 50, 70, 40, *rgb); // the bed
            fill(&mut img, x + 70, GROUND - 40, 20, 30, *rgb); // the cab
            fill(&mut img, x + 10, GROUND - 10, 14, 10, [20; 3]); // wheels
            fill(&mut img, x + 60, GROUND - 10, 14, 10, [20; 3]);
            let loaded = self
                .packages
                .iter()
                .enumerate()
                .filter(|(_, l)| **l == Load::In(t));
            for (slot, (k, _)) in loaded.enumerate() {
                draw_package(
                    &mut img,
                    x + 4 + slot as u32 * 22,
                    GROUND - 72,
                    PACKAGES[k].1,
                );
            }
        }
        let mut on_ground = [0u32; PLACES.len()];
        for (k, load) in self.packages.iter().enumerate() {
            if let &Load::At(p) = load {
                let x = p as u32 * PLACE_W + 14 + on_ground[p] * 26;
                on_ground[p] += 1;
                draw_package(&mut img, x, GROUND + 14, PACKAGES[k].1);
            }
        }
        img
    }
}

fn draw_package(img: &mut RgbImage, x: u32, y: u32, rgb: [u8; 3]) {
    fill(img, x, y, 20, 20, [60, 40, 20]);
    fill(img, x + 2, y + 2, 16, 16, rgb);
}

/// How many distinct logistics states there are: each truck at one of the places, each
/// package at a place or in a truck.
pub(crate) fn distinct_states() -> u64 {
    let trucks = (PLACES.len() as u64).pow(TRUCKS.len() as u32);
    let packages = ((PLACES.len() + TRUCKS.len()) as u64).pow(PACKAGES.len() as u32);
    trucks * packages
}

/// Writes `states` distinct random logistics scenes to `out` as `state_NNNN.png`, with their
/// ground truth in `ground_truth.json`. Seeded; more states than exist is an error.
pub(crate) fn synthesize(
    states: usize,
    seed: u64,
    out: &Path,
) -> Result<Vec<PathBuf>, RelevanceError> {
    let exist = distinct_states();
    if states as u64 > exist {
        return Err(RelevanceError::TooManyLogisticsStates {
            asked: states,
            exist,
        });
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut scenes = Vec::with_capacity(states);
    while scenes.len() < states {
        let state = State::random(&mut rng);
        if seen.insert(state.clone()) {
            scenes.push((state.render(), state.truth()));
        }
    }
    super::synth::write_scenes(out, scenes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_follows_the_state() {
        let state = State {
            trucks: [0, 2],
            packages: [Load::In(1), Load::At(1), Load::At(0)],
        };
        let truth = state.truth();
        // 2 trucks x 3 places + 3 packages x (3 places + 2 trucks).
        assert_eq!(truth.len(), 6 + 15);
        let is = |p: &str| truth[&p.parse::<Predicate>().unwrap()];
        assert!(is("at(truck_red,depot)") && is("at(truck_black,port)"));
        assert!(!is("at(truck_red,port)"));
        assert!(is("in(pkg_yellow,truck_black)") && !is("at(pkg_yellow,port)"));
        assert!(is("at(pkg_purple,market)") && is("at(pkg_orange,depot)"));
        assert_eq!(truth.values().filter(|t| **t).count(), 5);
        let kinds: HashSet<&str> = truth.keys().map(Predicate::kind).collect();
        assert_eq!(kinds, HashSet::from(["at", "in"]));
    }

    #[test]
    fn scenes_are_distinct_and_reproducible() {
        let dir = tempfile::tempdir().unwrap();
        let files = synthesize(5, 3, dir.path()).unwrap();
        assert_eq!(files.len(), 6);
        let truth = std::fs::read_to_string(dir.path().join("ground_truth.json")).unwrap();
        let again = tempfile::tempdir().unwrap();
        synthesize(5, 3, again.path()).unwrap();
        assert_eq!(
            truth,
            std::fs::read_to_string(again.path().join("ground_truth.json")).unwrap()
        );
        let error = synthesize(1126, 3, dir.path()).unwrap_err().to_string();
        assert!(error.contains("only 1125 distinct"), "{error}");
    }
}
