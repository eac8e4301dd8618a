-- What `track runs` shows of a run besides its file: the models it called (their canonical
-- references, comma-separated, in the experiment's order) and the command line that started
-- it (after `track`), which is what names a run of a command without an experiment file.
ALTER TABLE runs ADD COLUMN models TEXT;
ALTER TABLE runs ADD COLUMN command TEXT;

-- Runs recorded before: their models from the options each kind recorded.
UPDATE runs SET models = CASE kind
    WHEN 'bench' THEN (SELECT group_concat(value, ',') FROM json_each(options_json, '$.models'))
    WHEN 'relevance' THEN json_extract(options_json, '$.model')
    ELSE (SELECT group_concat(value, ',') FROM (
        SELECT value FROM json_each(options_json, '$.generators')
        UNION ALL
        SELECT value FROM json_each(options_json, '$.reviewers')))
    END
WHERE models IS NULL AND json_valid(options_json);
