"""The engine: runs the rules over the checked files (:mod:`.check`) and owns the scan that reads,
prefilters and summarizes them (:mod:`.scan`, over processes forked by :mod:`.parallel`)."""
