"""The model of pipeline-parallel execution that the rules ask (see docs/semantic-model.md).

* :mod:`.guards`: guard formulas and the one vocabulary of rank and pipeline-size words;
* :mod:`.flow`: the walker that gives each statement and expression its guard;
* :mod:`.values`: what an attribute holds on each rank (placeholders, ``make_layers`` lists);
* :mod:`.calls`: callers of a method and the guards of their calls, boolean helpers;
* :mod:`.entry`: what the engine calls on a model, in which order and on which ranks;
* :mod:`.mask`: findings that an earlier failure of the same model always precedes;
* :mod:`.reader`: the one reader of the analysed tree's files;
* :mod:`.service`: the base of those services (a memo of its own, the file checked, the resolver);
* :mod:`.model`: :class:`~.model.RankFacts`, the object a rule asks, which ties them together
  with the engines' facts (:mod:`pp_attr_lint.engines`).

Import the submodules themselves: this package imports nothing, so that listing the rules or
replaying a cached run loads no analysis code.
"""
