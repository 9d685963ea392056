"""A KV pool that holds one pipeline stage's layers, addressed by global layer id (SGLang's
``MHATokenToKVPool``), and attention backends that probe it."""
