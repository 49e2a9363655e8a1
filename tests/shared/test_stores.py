"""Store adapters: tantivy (runs here), OpenSearch (against osmem-server, an in-memory stand-in
speaking its REST API), Qdrant (the requests the adapter sends to a server, recorded by an HTTP
stand-in; and the same adapter over qdrant-client local mode), the embedded vector store."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from osmem_server import OsmemServer

from shared.config import Settings, StoreSettings
from shared.stores import bm25_store, uses_servers, vector_store
from shared.stores.bm25 import Bm25Doc, Bm25Error, OpenSearchBm25Store, TantivyBm25Store
from shared.stores.vectors import EmbeddedVectorStore, QdrantVectorStore, VectorStoreError, point_id
from tests.support.http_standin import HttpStandin

EIM = "employment-income-manual"
DOCS = [
    Bm25Doc(id="EIM31240#c2", section_id="EIM31240", text="Statutory mileage rates: cars and vans 45p, motor cycles 24p, cycles 20p"),
    Bm25Doc(id="EIM31405#c0", section_id="EIM31405", text="Passenger payments: the approved amount is 5p per passenger per business mile"),
    Bm25Doc(id="EIM26140#c0", section_id="EIM26140", text="Small loans: no charge where the loans outstanding do not exceed the threshold"),
]
SENTENCES = ["The employees' cycling allowances were paid", "Is a loan to an employee taxable?", "motor cycles AND vans: rates"]


@pytest.fixture(scope="module")
def opensearch() -> OsmemServer:
    with OsmemServer.start(freeze=False, japanese=False) as server:
        yield server


# --- tantivy -----------------------------------------------------------------------------------


def test_tantivy_analyzer_is_lowercase_stopwords_english_stemmer(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path / "bm25")
    # Lucene's (and tantivy's) English stop list is short: "the"/"to" go, "were" stays.
    assert store.analyze("The Employees were CYCLING to the meetings") == ["employe", "were", "cycl", "meet"]


def test_tantivy_build_search_and_reopen(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path / "bm25")
    assert store.build(DOCS) == 3
    hits = store.search("what is the rate per mile for a motorcycle passenger", 3)
    assert hits[0][0] == "EIM31405#c0"  # "passenger" is the rarer match
    assert {cid for cid, _ in store.search("loan", 3)} == {"EIM26140#c0"}  # stemmed: loans ~ loan
    assert store.search("the and of", 3) == [] and store.search("x", 0) == []
    reopened = TantivyBm25Store(tmp_path / "bm25")
    assert reopened.search("loan", 3) == store.search("loan", 3)
    with pytest.raises(Bm25Error, match="no BM25 index"):
        TantivyBm25Store(tmp_path / "missing").search("loan", 3)


def test_tantivy_terms_match_the_opensearch_english_analyzer(tmp_path: Path, opensearch: OsmemServer) -> None:
    store = TantivyBm25Store(tmp_path / "bm25")
    for sentence in SENTENCES:
        analysed = opensearch.request("POST", "/_analyze", {"analyzer": "english", "text": sentence})
        assert store.analyze(sentence) == [t["token"] for t in analysed["tokens"]]


# --- OpenSearch --------------------------------------------------------------------------------


def test_opensearch_builds_a_generation_index_with_the_english_mapping(opensearch: OsmemServer) -> None:
    store = OpenSearchBm25Store(opensearch.url, EIM, "g1")
    assert store.index == "taxnav-employment-income-manual-g1"
    assert store.build(DOCS) == 3
    mapping = store.client.indices.get(index=store.index)[store.index]["mappings"]
    assert mapping["properties"]["text"] == {"type": "text", "analyzer": "english"}
    assert store.search("loans", 2)[0][0] == "EIM26140#c0"
    assert store.search("   ", 2) == []
    with pytest.raises(Bm25Error, match="needs a generation"):
        OpenSearchBm25Store(opensearch.url, EIM).build(DOCS)


def test_opensearch_publish_swaps_the_alias_and_keeps_one_previous(opensearch: OsmemServer) -> None:
    manual = "self-assessment-manual"
    reader = OpenSearchBm25Store(opensearch.url, manual)  # reads through the alias
    for generation, text in (("g1", "first loans"), ("g2", "second loans"), ("g3", "third loans")):
        store = OpenSearchBm25Store(opensearch.url, manual, generation)
        store.build([Bm25Doc(id=f"{generation}#c0", section_id="S", text=text)])
        store.publish()
        assert [cid for cid, _ in reader.search("loans", 5)] == [f"{generation}#c0"]
    aliases = reader.client.indices.get_alias(name="taxnav-self-assessment-manual")
    assert list(aliases) == ["taxnav-self-assessment-manual-g3"]
    assert sorted(reader.client.indices.get(index="taxnav-self-assessment-manual-*")) == [
        "taxnav-self-assessment-manual-g2",
        "taxnav-self-assessment-manual-g3",
    ]


def test_opensearch_bulk_body_is_action_then_document() -> None:
    from shared.stores.bm25 import bulk_actions, search_body

    lines = bulk_actions("idx", DOCS[:2])
    assert lines[0] == {"index": {"_index": "idx", "_id": "EIM31240#c2"}}
    assert lines[1] == {"id": "EIM31240#c2", "section_id": "EIM31240", "text": DOCS[0].text}
    assert len(lines) == 4
    assert search_body("mileage", 12) == {"size": 12, "_source": ["id"], "query": {"match": {"text": {"query": "mileage", "operator": "or"}}}}


def test_opensearch_bulk_rejections_raise(opensearch: OsmemServer) -> None:
    store = OpenSearchBm25Store(opensearch.url, "business-income-manual", "gx")
    store.client.indices.create(index=store.index, body={"mappings": {"dynamic": "strict", "properties": {"id": {"type": "keyword"}}}})
    with pytest.raises(Bm25Error, match="rejected"):
        store._bulk(DOCS[:1])  # section_id/text are not in that strict mapping


# --- Qdrant over HTTP: the requests the adapter sends -------------------------------------------


def _qdrant_standin(aliases: list[dict], collections: list[str]) -> HttpStandin:
    ok = lambda result: (200, {"result": result, "status": "ok", "time": 0.0})  # noqa: E731
    point = {"id": point_id("EIM31240#c2"), "version": 1, "score": 0.75, "payload": {"chunk_id": "EIM31240#c2"}}
    return HttpStandin(
        {
            ("GET", r"/collections/(?P<name>[^/]+)/exists"): lambda m, b: ok({"exists": m["name"] in collections}),
            ("DELETE", r"/collections/(?P<name>[^/]+)"): lambda m, b: ok(True),
            ("PUT", r"/collections/(?P<name>[^/]+)"): lambda m, b: ok(True),
            ("PUT", r"/collections/(?P<name>[^/]+)/points"): lambda m, b: ok({"operation_id": 1, "status": "completed"}),
            ("POST", r"/collections/(?P<name>[^/]+)/points/query"): lambda m, b: ok({"points": [point]}),
            ("POST", r"/collections/(?P<name>[^/]+)/points"): lambda m, b: ok([{"id": point["id"], "vector": [0.6, 0.8]}]),
            ("GET", r"/aliases"): lambda m, b: ok({"aliases": aliases}),
            ("POST", r"/collections/aliases"): lambda m, b: ok(True),
            ("GET", r"/collections"): lambda m, b: ok({"collections": [{"name": n} for n in collections]}),
        }
    )


def test_qdrant_adapter_build_request() -> None:
    with _qdrant_standin([], ["taxnav-employment-income-manual-g2"]) as server:
        store = QdrantVectorStore.connect(server.base_url, EIM, "g2")
        vectors = np.eye(3, 4, dtype=np.float32)
        store.build(["a#c0", "b#c0", "c#c0"], vectors)
        sent = [(r.method, r.path) for r in server.requests]
        name = "/collections/taxnav-employment-income-manual-g2"
        assert sent == [("GET", f"{name}/exists"), ("DELETE", name), ("PUT", name), ("PUT", f"{name}/points")]
        create = server.requests[2].body
        assert create["vectors"] == {"size": 4, "distance": "Cosine"}
        upsert = server.requests[3]
        assert upsert.query["wait"] == ["true"]
        assert [p["id"] for p in upsert.body["points"]] == [point_id("a#c0"), point_id("b#c0"), point_id("c#c0")]
        assert upsert.body["points"][1]["vector"] == [0.0, 1.0, 0.0, 0.0]
        assert upsert.body["points"][2]["payload"] == {"chunk_id": "c#c0"}
        with pytest.raises(VectorStoreError, match="2 ids for 3 vectors"):
            store.build(["a", "b"], vectors)


def test_qdrant_adapter_search_retrieve_and_publish_requests() -> None:
    aliases = [{"alias_name": "taxnav-employment-income-manual", "collection_name": "taxnav-employment-income-manual-g1"}]
    collections = ["taxnav-employment-income-manual-g0", "taxnav-employment-income-manual-g1", "taxnav-employment-income-manual-g2", "taxnav-business-income-manual-g9"]
    with _qdrant_standin(aliases, collections) as server:
        store = QdrantVectorStore.connect(server.base_url, EIM, "g2")
        assert store.search(np.array([0.6, 0.8], dtype=np.float32), 5) == [("EIM31240#c2", 0.75)]
        query = server.requests[-1]
        assert query.path == "/collections/taxnav-employment-income-manual-g2/points/query"
        assert query.body["query"]["nearest"] == pytest.approx([0.6, 0.8]) and query.body["limit"] == 5
        assert query.body["with_payload"] == ["chunk_id"]
        assert np.allclose(store.vector("EIM31240#c2"), [0.6, 0.8])
        assert server.requests[-1].body["ids"] == [point_id("EIM31240#c2")]
        server.requests.clear()
        store.publish()
        alias_change = next(r for r in server.requests if r.path == "/collections/aliases")
        assert alias_change.body["actions"] == [
            {"delete_alias": {"alias_name": "taxnav-employment-income-manual"}},
            {"create_alias": {"collection_name": "taxnav-employment-income-manual-g2", "alias_name": "taxnav-employment-income-manual"}},
        ]
        deleted = [r.path for r in server.requests if r.method == "DELETE"]
        assert deleted == ["/collections/taxnav-employment-income-manual-g0"]  # g1 (previous) kept, other manuals untouched


def test_qdrant_adapter_over_local_mode_end_to_end() -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((20, 8)).astype(np.float32)
    ids = [f"EIM{i}#c0" for i in range(20)]
    for generation in ("g1", "g2"):
        store = QdrantVectorStore(client, EIM, generation)
        store.build(ids, vectors)
        store.publish()
    reader = QdrantVectorStore(client, EIM)  # through the alias
    assert reader.search(vectors[3], 1)[0][0] == "EIM3#c0"
    assert np.allclose(reader.vector("EIM5#c0"), vectors[5] / np.linalg.norm(vectors[5]), atol=1e-5)
    assert reader.vector("nope") is None


# --- embedded vectors ------------------------------------------------------------------------------


def unit_vectors(n: int, dims: int, seed: int) -> tuple[list[str], np.ndarray]:
    """``n`` chunk ids and random L2-normalised vectors, as the embedder would give."""
    vectors = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [f"EIM{i}#c0" for i in range(n)], vectors


def test_embedded_vector_store_persists_and_serves_from_local_mode(tmp_path: Path) -> None:
    ids, vectors = unit_vectors(50, 16, seed=1)
    EmbeddedVectorStore(tmp_path, EIM, "g1").build(ids, vectors)
    assert (tmp_path / "vectors.npy").is_file() and (tmp_path / "vector_ids.json").is_file()
    store = EmbeddedVectorStore(tmp_path, EIM, "g1")  # a fresh reader
    hits = store.search(vectors[7], 3)
    assert hits[0][0] == "EIM7#c0" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert np.array_equal(store.vector("EIM9#c0"), vectors[9])
    assert store.vector("missing") is None
    with pytest.raises(VectorStoreError, match="no vectors"):
        EmbeddedVectorStore(tmp_path / "empty", EIM, "g1").search(vectors[0], 3)


def test_embedded_vector_store_cold_start_is_safe_under_concurrent_searches(tmp_path: Path) -> None:
    # The gateway answers on several threads: the first searches race to load the vectors.
    ids, vectors = unit_vectors(2000, 32, seed=2)
    EmbeddedVectorStore(tmp_path, EIM, "g1").build(ids, vectors)
    store = EmbeddedVectorStore(tmp_path, EIM, "g1")
    with ThreadPoolExecutor(max_workers=8) as pool:
        tops = list(pool.map(lambda row: store.search(vectors[row], 1)[0][0], range(0, 2000, 125)))
    assert tops == [f"EIM{row}#c0" for row in range(0, 2000, 125)]


def test_backend_selection(tmp_path: Path) -> None:
    embedded = Settings(data_dir=tmp_path)
    assert not uses_servers(embedded)
    assert isinstance(bm25_store(embedded, EIM, tmp_path, "g1"), TantivyBm25Store)
    assert isinstance(vector_store(embedded, EIM, tmp_path, "g1"), EmbeddedVectorStore)
    distributed = Settings(data_dir=tmp_path, mode="distributed")
    assert uses_servers(distributed)
    assert isinstance(bm25_store(distributed, EIM, tmp_path, "g1"), OpenSearchBm25Store)
    assert type(vector_store(distributed, EIM, tmp_path, "g1")) is QdrantVectorStore
    local_stores = Settings(data_dir=tmp_path, mode="distributed", stores=StoreSettings(backend="local"))
    assert not uses_servers(local_stores)
