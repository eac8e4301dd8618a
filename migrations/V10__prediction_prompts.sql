-- The sha256 of the prompt template each prediction was asked with (its variant's), so that
-- predictions asked with different domain prompts are never mistaken for one another.
ALTER TABLE relevance_predictions ADD COLUMN prompt_sha256 TEXT;
