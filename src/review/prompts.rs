//! The review experiment's built-in prompts (the files of `prompts/`). Only the texts live
//! here: loading and rendering them is `crate::prompt`'s job, not this file's.

/// The built-in review prompt (`prompts/review_criteria_prompt.txt`).
pub const REVIEW_PROMPT: &str = include_str!("../../prompts/review_criteria_prompt.txt");
/// The built-in generation prompt (`prompts/datasheet_generation_prompt.txt`).
pub const GENERATION_PROMPT: &str = include_str!("../../prompts/datasheet_generation_prompt.txt");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Template;

    #[test]
    fn the_built_in_prompts_have_their_placeholders() {
        let review = Template::load(
            None,
            REVIEW_PROMPT,
            &["official_datasheet", "generated_datasheet"],
        )
        .unwrap();
        assert!(review.text.contains("{criteria}"));
        Template::load(None, GENERATION_PROMPT, &["brand", "sensor"]).unwrap();
    }
}
