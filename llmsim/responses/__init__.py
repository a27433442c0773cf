"""The Responses API core: request schema, translator, event builder, the Response object."""
