"""Retrieval against LLMSim's embeddings (POST /v1/embeddings), as a RAG pipeline in CI runs it: LangChain's
OpenAIEmbeddings with an InMemoryVectorStore, and llama-index's VectorStoreIndex with OpenAIEmbedding, each
retrieving the document that answers a question."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from llmsim.pytest_plugin import LLMSim
from llmsim.tokens import RANKS_DIR
from optional import needs

CL100K = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

DOCUMENTS = ["Paris is the capital of France, a country in Western Europe.",
             "The mitochondria is the powerhouse of the cell.",
             "Python is a programming language created by Guido van Rossum.",
             "Photosynthesis lets plants turn sunlight into chemical energy.",
             "The Great Wall of China stretches across northern China."]
QUESTIONS = {"What is the capital of France?": 0, "Who created the Python programming language?": 2,
             "How do plants use sunlight?": 3}


@pytest.fixture
def tiktoken_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAIEmbeddings counts tokens with tiktoken, which downloads its encoding at first use: here it finds it in
    its cache, filled from the copy LLMSim ships (the tests run offline, as a CI may)."""
    name = hashlib.sha1(CL100K.encode()).hexdigest()
    (tmp_path / name).write_bytes(gzip.decompress((RANKS_DIR / "cl100k_base.tiktoken.gz").read_bytes()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))


@needs("langchain_openai")
@pytest.mark.usefixtures("tiktoken_cache")
def test_langchain_in_memory_vector_store(llmsim: LLMSim) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import OpenAIEmbeddings

    embedder = OpenAIEmbeddings(model="text-embedding-3-small", base_url=llmsim.base_url,
                                api_key="sk-llmsim")  # type: ignore[arg-type]
    store = InMemoryVectorStore.from_texts(DOCUMENTS, embedder)
    for question, answer in QUESTIONS.items():
        found = store.similarity_search(question, k=1)
        assert found[0].page_content == DOCUMENTS[answer], question
    assert len(embedder.embed_query("hello")) == 1536


@needs("llama_index.embeddings.openai")
def test_llama_index_vector_store_index(llmsim: LLMSim) -> None:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.embeddings.openai import OpenAIEmbedding

    embedder = OpenAIEmbedding(model="text-embedding-3-large", dimensions=512, api_base=llmsim.base_url,
                               api_key="sk-llmsim")
    index = VectorStoreIndex.from_documents([Document(text=text) for text in DOCUMENTS], embed_model=embedder)
    retriever = index.as_retriever(similarity_top_k=1)
    for question, answer in QUESTIONS.items():
        found = retriever.retrieve(question)
        assert found[0].node.get_content() == DOCUMENTS[answer], question
    assert len(embedder.get_query_embedding("hello")) == 512
