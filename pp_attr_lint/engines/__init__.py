"""What the engines do with a model, read from the analysed tree (one module per engine, like
astroid's ``brain/``): which classes they load, which they refuse under pipeline parallelism,
and what their model runner requires of a model's ``forward``.

* :mod:`.vllm`: vLLM and its forks (Aphrodite): the model registry, the ``SupportsPP``
  refusal of ``vllm/config/model.py``, features that refuse pipeline parallelism;
* :mod:`.sglang`: SGLang: the ``EntryClass`` registry (a plugin's package handed to
  ``ModelRegistry.register`` included) and the model runner's assert that ``forward`` takes
  ``pp_proxy_tensors``;
* :mod:`.release`: the names the engine release a plugin is checked against lacks.
"""
