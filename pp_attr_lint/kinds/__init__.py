"""Rule kinds: what several rules share.

* :mod:`.wrapper`: the ``wrapper-attribute`` kind that ``rule.yaml`` files declare (PPA001, PPA002
  and a project's own rules), with its analysis in :mod:`.wrapper_analysis`;
* :mod:`.placeholder`: the placeholder family (PPA101-PPA103): one collector, one walk over the
  recorded uses;
* :mod:`.skipped_init`: the byte prefilter of an explicit base ``__init__`` call that may skip a
  base (PPA301, and PPA201 for a hook only a skipped ``__init__`` assigns).

Rule folders import up to here (this layer, the rule API and everything below it).
"""
