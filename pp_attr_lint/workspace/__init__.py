"""The workspace: the files of a run and the modules they resolve to.

:mod:`.files` (which files, their package roots), :mod:`.modules` (names for namespace folders and
lone files), :mod:`.environment` (an interpreter's import folders), :mod:`.cache` (stat indexes,
summary packs, memoized runs) and :mod:`.project` (the summary source of one project group).  It
knows nothing of rules, the resolver or the CLI.
"""
