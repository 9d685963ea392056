"""The index: what one file declares, read with the stdlib ``ast`` (:mod:`.summary`), what the
rules ask of it (:mod:`.spec`) and the byte prefilter that decides which files are worth parsing
(:mod:`.prefilter`).  It knows nothing of files on disk, modules across files, rules or the CLI.

Kept empty so that importing :mod:`.spec` (every run, also a warm one) does not load the
summarizer."""
