"""A routine that embeds the inputs and runs the language model handed to it (SGLang's
`general_mm_embed_routine`, sglang/srt/managers/mm_utils.py): what the model's caller passes as
keywords the routine does not name reaches the language model through `**kwargs`."""


def general_mm_embed_routine(input_ids, forward_batch, language_model, multimodal_model=None, **kwargs):
    assert hasattr(language_model, "get_input_embeddings")
    embed_tokens = language_model.get_input_embeddings()
    input_embeds = embed_tokens(input_ids)
    kwargs["forward_batch"] = forward_batch
    return language_model(input_ids=None, input_embeds=input_embeds, **kwargs)
