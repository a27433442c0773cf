"""Chaos state and scenario progress in Redis: N servers x M workers keep one schedule, one set of buckets.

Each request's decision is one Lua script: the request is logged (with its scenario turn when no scenario
is loaded), its rate-limit buckets are refilled and taken from (or not), and the rules in its scope count
it, all at once, so `first: 3` fires three times fleet-wide and an RPM of 8 admits 8. The fault config and
the scenario carry a generation number: a process keeps the parsed config until a script says the fleet's
has moved on.

A JSON answer that nothing can intervene in, as this process sees the fleet (no rule in its scope, no rate
limit, no forced fault, no scenario), is made first and admitted after, with its stored response, in one
script (`Batch.defer`): the script checks that both generation numbers are still those the process saw, so
the request was admitted under that config; if one moved on it does nothing, and the request, whose answer
has not left, is admitted and made again the usual way.

A server that starts with fault flags (or a scenario file) different from those the fleet last started
with installs them; a server starting with the same flags keeps the fleet's state (admin changes,
schedules), so a rolling restart changes nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import threading
import time
from collections import OrderedDict
from typing import Any

from llmsim.chaos.ratelimit import KINDS, TOKEN_KINDS, Bucket, Charge, Limits, Verdict
from llmsim.chaos.rules import FaultConfig, RequestInfo, Rule
from llmsim.chaos.scenarios import (
    TRANSCRIPT,
    Player,
    Reply,
    Scenario,
    ScenarioMoved,
    StreamFault,
    exhausted,
    play,
    refusal,
)
from llmsim.chaos.state import RECENT, ChaosState, Decision, ResolveLimits
from llmsim.errors import APIError
from llmsim.generation import Prompt
from llmsim.store.redis_client import PREFIX, Batch, Guard, Scripts, dumps

CHAOS = f"{PREFIX}chaos"  # hash: gen, config, seed, flags, served, rejected
SEEN = f"{PREFIX}chaos:seen"  # hash: rule index -> requests in its scope since the config was set
FAULTS = f"{PREFIX}chaos:faults"  # hash: fault kind -> times served
LOG = f"{PREFIX}chaos:log"  # hash: request index -> log entry (the latest RECENT)
BUCKETS = f"{PREFIX}rl:"
SCENARIO = f"{PREFIX}scenario"  # hash: gen, scenario, flags, requests, position
FIRED = f"{PREFIX}scenario:fired"  # hash: rule index -> times fired
TRANSCRIPT_KEY = f"{PREFIX}scenario:transcript"  # list of entries, oldest first
WRITTEN = 10_000  # log entries remembered between decide and finish, at most
MAX_STALE = 5  # config reloads one request may need while an admin changes it repeatedly


class _Turns(threading.local):
    """Per greenlet: a request's scenario turn that RedisPlayer.direct left to RedisChaosState.decide to record."""

    pending: list[Any] | None = None  # the scenario's gen and the transcript entry's parts
    request: tuple[Prompt, Any, bool, str]  # the request's prompt, body, stream flag and owner, to direct it again
    moved: bool = False  # decide found a scenario loaded since: direct must play it


_turns = _Turns()

# KEYS: state hash, the keys to clear. ARGV: '1' (only when the fleet has no state) or '0' (when its flags differ
# too), flags, then field, value pairs. Installing starts a new generation: schedules from zero.
_PUBLISH_FLAGS = """
local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen or (ARGV[1] == '0' and redis.call('HGET', KEYS[1], 'flags') ~= ARGV[2]) then
  redis.call('HSET', KEYS[1], 'flags', ARGV[2], unpack(ARGV, 3))
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
end
return redis.call('HGET', KEYS[1], 'gen')
"""

# KEYS: state hash, the keys to clear. ARGV: field, value pairs.
_REPLACE = """
redis.call('HSET', KEYS[1], unpack(ARGV))
redis.call('HINCRBY', KEYS[1], 'gen', 1)
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""

# A transcript entry, as the process's own Player writes it (`model`: the model's JSON and its owner's, `_model`;
# `mark`: ',"refused":{...}' or nil); the latest `keep` are kept.
_RECORD = """
local function record(key, turn, time, model, step, request, keep, mark)
  redis.call('RPUSH', key, '{"index":' .. turn .. ',"time":' .. time .. ',"model":' .. model ..
    ',"step":' .. step .. (mark or '') .. ',"request":' .. request .. '}')
  redis.call('LTRIM', key, -tonumber(keep), -1)
end
"""

_BUCKET = """
local function now_s()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function refill(key, cap, now)
  local b = redis.call('HMGET', key, 'level', 'updated', 'cap')
  if not b[1] or tonumber(b[3]) ~= cap then return cap end
  return math.min(cap, tonumber(b[1]) + (now - tonumber(b[2])) * cap / 60)
end
local function save(key, cap, level, now)
  redis.call('HSET', key, 'level', tostring(level), 'updated', tostring(now), 'cap', cap)
  redis.call('EXPIRE', key, 120)  -- idle a minute, a bucket is full: no key says the same
end
"""

# KEYS: chaos, log, requests bucket, seen, then the tokens, input-tokens and output-tokens buckets[, scenario,
# transcript]. ARGV: gen, the log entry after its '{' when admitted and when rate-limited, rpm or '', the token
# buckets' limits ('tpm,itpm,otpm', each '' when unset), their amounts ('t,i,o'), RECENT, then (with the scenario's
# keys) the request's turn when no scenario is loaded: the scenario's gen, time, model JSON, request JSON, TRANSCRIPT
# (else five ''; the gen alone: checked, the turn left to the player), then the indexes of the rules in scope.
# → {'stale'}, {'scenario'} (one was loaded: nothing done) or
#   {'ok', index, exceeded or '', requests level, the three token levels, count per rule in scope...}
_ADMIT = _RECORD + _BUCKET + """
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return {'stale'} end
if #KEYS > 7 then
  if redis.call('HGET', KEYS[8], 'gen') ~= ARGV[8] then return {'scenario'} end
  if ARGV[9] ~= '' then
    record(KEYS[9], redis.call('HINCRBY', KEYS[8], 'requests', 1) - 1, ARGV[9], ARGV[10], 'null', ARGV[11], ARGV[12])
  end
end
local n = redis.call('HINCRBY', KEYS[1], 'served', 1)
local now = now_s()
local rpm = tonumber(ARGV[4])
local caps, amounts, i = {}, {}, 0
for v in string.gmatch(ARGV[5] .. ',', '([^,]*),') do i = i + 1; caps[i] = tonumber(v) end
i = 0
for v in string.gmatch(ARGV[6] .. ',', '([^,]*),') do i = i + 1; amounts[i] = tonumber(v) end
local kinds = {'tokens', 'input_tokens', 'output_tokens'}
local rq, levels = 0, {0, 0, 0}
if rpm then rq = refill(KEYS[3], rpm, now) end
for j = 1, 3 do if caps[j] then levels[j] = refill(KEYS[4 + j], caps[j], now) end end
local exceeded = ''
if rpm and rq + 1e-9 < 1 then exceeded = 'requests' else
  for j = 1, 3 do
    if caps[j] and levels[j] + 1e-9 < amounts[j] then exceeded = kinds[j]; break end
  end
end
if exceeded == '' then
  if rpm then rq = rq - 1 end
  for j = 1, 3 do if caps[j] then levels[j] = levels[j] - amounts[j] end end
end
if rpm then save(KEYS[3], rpm, rq, now) end
for j = 1, 3 do if caps[j] then save(KEYS[4 + j], caps[j], levels[j], now) end end
local entry = ARGV[2]
if exceeded ~= '' then entry = ARGV[3] end
redis.call('HSET', KEYS[2], n, '{"index":' .. n .. ',' .. entry)
redis.call('HDEL', KEYS[2], n - tonumber(ARGV[7]))
local result = {'ok', n, exceeded, tostring(rq), tostring(levels[1]), tostring(levels[2]), tostring(levels[3])}
if exceeded ~= '' then
  redis.call('HINCRBY', KEYS[1], 'rejected', 1)
  return result
end
for i = 13, #ARGV do table.insert(result, redis.call('HINCRBY', KEYS[4], ARGV[i], 1)) end
return result
"""

# KEYS: chaos, log, scenario, transcript. ARGV: gen, the scenario's gen, the log entry after its '{', RECENT, then
# the request's turn: time, model JSON, request JSON, TRANSCRIPT. The admission of a request nothing could intervene
# in (see the module's docstring), sent with its writes. → {'ok', index} or {'stale'} (nothing done).
_ADMITTED = _RECORD + """
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] or redis.call('HGET', KEYS[3], 'gen') ~= ARGV[2] then
  return {'stale'}
end
record(KEYS[4], redis.call('HINCRBY', KEYS[3], 'requests', 1) - 1, ARGV[5], ARGV[6], 'null', ARGV[7], ARGV[8])
local n = redis.call('HINCRBY', KEYS[1], 'served', 1)
redis.call('HSET', KEYS[2], n, '{"index":' .. n .. ',' .. ARGV[3])
redis.call('HDEL', KEYS[2], n - tonumber(ARGV[4]))
return {'ok', n}
"""

# KEYS: buckets. ARGV: per bucket, its capacity and the tokens to charge (negative: refund).
_SETTLE = _BUCKET + """
local now = now_s()
for i = 1, #KEYS do
  local cap = tonumber(ARGV[2 * i - 1])
  save(KEYS[i], cap, math.min(cap, refill(KEYS[i], cap, now) - tonumber(ARGV[2 * i])), now)
end
return 1
"""

# KEYS: log. ARGV: index, entry. Only an entry still in the window is rewritten.
_FINISH = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1
"""


@functools.lru_cache(maxsize=4096)
def _bucket(key: tuple[str, str]) -> str:
    """The rate-limit buckets' key prefix of an (API key, model) pair; the API key is not written in clear."""
    return BUCKETS + hashlib.sha256("\0".join(key).encode()).hexdigest()[:32]


class RedisChaosState(ChaosState):
    """Fault config and schedules, fault counters, rate-limit buckets and the request log of a fleet (the same
    interface as the process's own `ChaosState`, none of its attributes)."""

    def __init__(self, client: Any, config: FaultConfig, seed: int | None, batch: Batch | None = None) -> None:
        self.client = client
        self.batch = batch or Batch(Scripts(client))
        self._admit = self.batch.scripts.register(_ADMIT)
        self._admitted = self.batch.scripts.register(_ADMITTED)
        self._settle = self.batch.scripts.register(_SETTLE)
        self._finish = self.batch.scripts.register(_FINISH)
        self._replace = self.batch.scripts.register(_REPLACE)
        self._publish = self.batch.scripts.register(_PUBLISH_FLAGS)
        self._written: OrderedDict[int, dict[str, Any]] = OrderedDict()  # entries as decide wrote them
        config_json = config.model_dump_json(exclude_none=True)
        self._flags = [dumps({"config": config_json, "seed": seed}), "config", config_json, "seed", dumps(seed)]
        self._refresh(starting=True)

    def _refresh(self, starting: bool = False) -> None:
        """The fleet's config; this server's flags when it starts with other flags than the fleet's last, or
        when Redis has none (it lost its data)."""
        self._publish(keys=[CHAOS, SEEN], args=["0" if starting else "1", *self._flags])
        gen, config, seed = self.client.hmget(CHAOS, ["gen", "config", "seed"])
        self._gen = gen.decode()
        self._config = FaultConfig.model_validate_json(config)
        self._seed: int | None = json.loads(seed)

    @property
    def config(self) -> FaultConfig:
        self._refresh()
        return self._config

    def configure(self, config: FaultConfig) -> None:
        self._replace(keys=[CHAOS, SEEN], args=["config", config.model_dump_json(exclude_none=True)])

    def decide(self, request: RequestInfo, entry: dict[str, Any], key: tuple[str, str], resolve: ResolveLimits,
              tokens: Charge, choose: bool, whole: bool = False) -> Decision:
        turn, _turns.pending = _turns.pending, None  # the request's turn, when RedisPlayer left it to us
        sent = None
        for _ in range(MAX_STALE):
            config = self._config
            limits = resolve(config)
            scope = [i for i, rule in enumerate(config.faults) if rule.in_scope(request)] if choose else []
            if whole and choose and turn is not None and not scope and not limits and self.batch.deferrable():
                return self._defer(entry, limits, turn)
            # Recorded here only when nothing can refuse the request; else RedisPlayer.flush records it, marked
            # when it was refused (a refused request takes no turn).
            sent = turn if choose and not scope and not limits else None
            bucket = _bucket(key)
            keys = [CHAOS, LOG, f"{bucket}:requests", SEEN, *(f"{bucket}:{kind}" for kind in TOKEN_KINDS)]
            if turn is not None:  # the scenario's gen checked; the turn recorded when sent
                keys += [SCENARIO, TRANSCRIPT_KEY]
            # The entry as it will end when nothing fires (no rule in scope, no forced fault) or when rate-limited:
            # `finish` then has nothing to rewrite, which saves a round trip on most requests.
            admitted = {**entry, "status": 200} if choose and not scope else entry
            limited = {**entry, "rate_limited": True, "status": 429}
            result = self._admit(keys=keys, args=[
                self._gen, dumps(admitted)[1:], dumps(limited)[1:], limits.rpm or "",
                ",".join(str(getattr(limits, KINDS[kind][0]) or "") for kind in TOKEN_KINDS),
                ",".join(str(tokens.amount(kind)) for kind in TOKEN_KINDS), RECENT,
                *(sent or [turn[0], "", "", "", ""] if turn else ["", "", "", "", ""]), *scope])
            if result[0] == b"ok":
                break
            if result[0] == b"scenario":
                _turns.moved = True
                raise ScenarioMoved()
            self._refresh()
        else:
            raise RuntimeError("the fault config kept changing while a request was admitted")
        if sent is None:
            _turns.pending = turn  # left to RedisPlayer.flush
        index = int(result[1])
        self._remember({"index": index, **(limited if result[2] else admitted)})
        decision = Decision({"index": index, **entry}, limits)
        if limits:
            levels = [float(level) for level in result[3:7]]
            decision.verdict = self._verdict(limits, tokens, result[2].decode(), levels)
        if choose and (decision.verdict is None or decision.verdict.allowed):
            decision.rule = self._choose(config, scope, [int(count) for count in result[7:]])
        return decision

    def _defer(self, entry: dict[str, Any], limits: Limits, turn: list[Any]) -> Decision:
        """Admitted as this process sees the fleet; recorded, with the entry as the request ends, by the script
        its writes are sent with (no index until then)."""
        entry = dict(entry)  # the request's own, completed as it goes (the metrics' Meter, `answered`)
        gen = self._gen
        sent: dict[str, Any] = {}

        def args() -> list[Any]:
            sent.update(entry, status=entry["status"] or 200)  # an answer made, not yet sent, is a 200
            return [gen, turn[0], dumps(sent)[1:], RECENT, *turn[1:]]

        def accepted(reply: list[Any]) -> bool:
            if reply[0] != b"ok":
                return False
            entry["index"] = sent["index"] = int(reply[1])
            self._remember(sent)
            return True

        self.batch.defer(Guard(self._admitted, [CHAOS, LOG, SCENARIO, TRANSCRIPT_KEY], args, accepted))
        return Decision(entry, limits)

    def _remember(self, written: dict[str, Any]) -> None:
        """A log entry as written, so that `finish` writes it again only if the request changed it."""
        self._written[written["index"]] = written
        while len(self._written) > WRITTEN:
            self._written.popitem(last=False)

    @staticmethod
    def _verdict(limits: Limits, charge: Charge, exceeded: str, levels: list[float]) -> Verdict:
        """The script's levels (requests, then the token buckets) as the Verdict the headers and the 429 are made
        from."""
        buckets: dict[str, Bucket] = {}
        for kind, level in zip(KINDS, levels, strict=True):
            capacity = getattr(limits, KINDS[kind][0])
            if capacity is not None:
                buckets[kind] = made = Bucket(capacity, 0.0)
                made.level = level
        verdict = Verdict(limits, buckets, charge)
        if exceeded:
            hit, amount = buckets[exceeded], charge.amount(exceeded)
            verdict.exceeded = exceeded
            verdict.retry_after = hit.wait(amount) if amount <= hit.capacity else None
        return verdict

    def _choose(self, config: FaultConfig, scope: list[int], counts: list[int]) -> Rule | None:
        """The first rule in scope that fires at its count; a probability draws from (seed, rule, count), so a
        seeded fleet gives the same sequence whichever worker serves which request."""
        seed = config.seed if config.seed is not None else self._seed
        chosen: Rule | None = None
        for i, count in zip(scope, counts, strict=True):
            rule = config.faults[i]
            if rule.probability is not None:
                draw = random.Random(f"{seed}:{i}:{count}").random() if seed is not None else random.random()
                drawn = draw < rule.probability
            else:
                drawn = False
            if chosen is None and (rule.unconditional or drawn or rule.scheduled(count)):
                chosen = rule
        return chosen

    def settle(self, key: tuple[str, str], limits: Limits, extra_tokens: Charge) -> None:
        bucket = _bucket(key)
        keys: list[str] = []
        args: list[int] = []
        for kind in TOKEN_KINDS:
            capacity, amount = getattr(limits, KINDS[kind][0]), extra_tokens.amount(kind)
            if capacity is not None and amount:
                keys.append(f"{bucket}:{kind}")
                args += [capacity, amount]
        if keys:
            self.batch.write(self._settle, keys, args)  # JSON: as it leaves

    def count(self, kind: str) -> None:
        self.client.hincrby(FAULTS, kind, 1)

    def finish(self, entry: dict[str, Any]) -> None:
        if "index" not in entry:  # its admission is deferred: it writes the entry as it is then
            return
        if self._written.pop(entry["index"], None) != entry:  # with a JSON answer's stored response
            self.batch.write(self._finish, [LOG], [entry["index"], dumps(entry)])

    def counters(self) -> dict[str, Any]:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hgetall(FAULTS)
            pipe.hmget(CHAOS, ["rejected", "served"])
            faults, (rejected, served) = pipe.execute()
        return {"faults": {kind.decode(): int(n) for kind, n in faults.items()}, "rate_limited": int(rejected or 0),
                "requests": int(served or 0)}

    def recent(self, limit: int) -> list[dict[str, Any]]:
        served = int(self.client.hget(CHAOS, "served") or 0)
        indexes = list(range(max(1, served - limit + 1), served + 1))
        entries = self.client.hmget(LOG, indexes) if indexes else []
        return [json.loads(entry) for entry in entries if entry is not None]

    def reset(self) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(SEEN, FAULTS, LOG)
            pipe.hset(CHAOS, mapping={"served": 0, "rejected": 0})
            pipe.execute()
        buckets = list(self.client.scan_iter(match=f"{BUCKETS}*", count=1000))
        if buckets:
            self.client.delete(*buckets)


# KEYS: scenario, fired, transcript. ARGV: gen, rules, turns, policy ('' when none is loaded), time, model JSON,
# request JSON, TRANSCRIPT, then per rule: times or '', '1' when its match holds (turn aside), turns ('a,b') or ''.
# → {'stale'} or {'ok', turn, 'rules' | 'turns' | 'error' | '', index}
_DIRECT = _RECORD + """
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return {'stale'} end
local turn = redis.call('HINCRBY', KEYS[1], 'requests', 1) - 1
local nrules, nturns, policy = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local kind, index = '', -1
for i = 0, nrules - 1 do
  local times, holds, turns = ARGV[9 + 3 * i], ARGV[10 + 3 * i], ARGV[11 + 3 * i]
  local ok = holds == '1'
  if ok and times ~= '' then ok = tonumber(redis.call('HGET', KEYS[2], i) or '0') < tonumber(times) end
  if ok and turns ~= '' then
    ok = false
    for t in string.gmatch(turns, '[^,]+') do if tonumber(t) == turn then ok = true end end
  end
  if ok then redis.call('HINCRBY', KEYS[2], i, 1); kind = 'rules'; index = i; break end
end
if kind == '' and policy ~= '' then
  local position = tonumber(redis.call('HGET', KEYS[1], 'position') or '0')
  if position < nturns then redis.call('HSET', KEYS[1], 'position', position + 1); kind = 'turns'; index = position
  elseif policy == 'repeat_last' then kind = 'turns'; index = nturns - 1
  elseif policy == 'cycle' then redis.call('HSET', KEYS[1], 'position', 1); kind = 'turns'; index = 0
  elseif policy == 'error' then kind = 'error' end
end
local step = 'null'
if kind == 'rules' or kind == 'turns' then step = '"' .. kind .. '[' .. index .. ']"' end
record(KEYS[3], turn, ARGV[5], ARGV[6], step, ARGV[7], ARGV[8])
return {'ok', turn, kind, index}
"""


# KEYS: scenario, transcript. ARGV: time, model JSON, request JSON, TRANSCRIPT, the refusal's mark. A refused
# request, recorded at the turn it did not take.
_REFUSED = _RECORD + """
record(KEYS[2], tonumber(redis.call('HGET', KEYS[1], 'requests') or '0'), ARGV[1], ARGV[2], 'null', ARGV[3], ARGV[4],
       ARGV[5])
return 1
"""


def _model(prompt: Prompt, owner: str) -> str:
    """A transcript entry's model and owner, as the scripts' `record` writes them after `"model":`."""
    return f'{dumps(prompt.model)},"owner":{dumps(owner)}'


class RedisPlayer(Player):
    """A scenario played fleet-wide: one position, one set of rule counts, one transcript."""

    def __init__(self, client: Any, scenario: Scenario | None = None, scripts: Scripts | None = None) -> None:
        self.client = client
        scripts = scripts or Scripts(client)
        self._direct = scripts.register(_DIRECT)
        self._refused = scripts.register(_REFUSED)
        self._replace = scripts.register(_REPLACE)
        self._publish = scripts.register(_PUBLISH_FLAGS)
        text = "" if scenario is None else scenario.model_dump_json()
        self._flags = [text, "scenario", text, "requests", 0, "position", 0]
        self._refresh(starting=True)

    def _refresh(self, starting: bool = False) -> None:
        self._publish(keys=[SCENARIO, FIRED, TRANSCRIPT_KEY], args=["0" if starting else "1", *self._flags])
        gen, text = self.client.hmget(SCENARIO, ["gen", "scenario"])
        self._gen = gen.decode()
        self.scenario = Scenario.model_validate_json(text) if text else None

    def load(self, scenario: Scenario | None) -> None:
        text = "" if scenario is None else scenario.model_dump_json()
        self._replace(keys=[SCENARIO, FIRED, TRANSCRIPT_KEY],
                      args=["scenario", text, "requests", 0, "position", 0])

    def reset(self) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(FIRED, TRANSCRIPT_KEY)
            pipe.hset(SCENARIO, mapping={"requests": 0, "position": 0})
            pipe.execute()

    def deferred(self) -> bool:
        """With no scenario loaded (as this process last saw), the request's admission records its turn."""
        if getattr(_turns, "moved", False):
            _turns.moved = False
            self._refresh()
        return self.scenario is None

    def refused(self, prompt: Prompt, body: Any, error: BaseException, owner: str = "") -> None:
        self._refused(keys=[SCENARIO, TRANSCRIPT_KEY], args=[repr(time.time()), _model(prompt, owner), dumps(body),
                                                             TRANSCRIPT, ',"refused":' + dumps(refusal(error))])

    def flush(self, refused: BaseException | None = None) -> None:
        """The request's turn if its admission did not record it (something could refuse it, or it had none):
        recorded, marked, if it was refused; else taken as `direct` would have, in whatever scenario the fleet now
        plays; the request has its answer already."""
        if _turns.pending is None:
            return
        _turns.pending = None
        if refused is not None:
            prompt, body, _, owner = _turns.request
            self.refused(prompt, body, refused, owner)
            return
        try:
            self._play(*_turns.request)
        except APIError:  # that scenario is exhausted: the turn is recorded, the request keeps its own answer
            pass

    def state(self) -> dict[str, Any]:
        self._refresh()
        requests, position = self.client.hmget(SCENARIO, ["requests", "position"])
        scenario = self.scenario.model_dump(mode="json", exclude_none=True) if self.scenario else None
        return {"scenario": scenario, "requests": int(requests or 0), "position": int(position or 0)}

    def recent(self, limit: int) -> list[dict[str, Any]]:
        return [json.loads(entry) for entry in self.client.lrange(TRANSCRIPT_KEY, -limit, -1)]

    def direct(self, prompt: Prompt, body: Any, stream: bool, owner: str = "") -> tuple[Prompt, StreamFault | None]:
        """With no scenario loaded (as this process last saw), the request's turn is recorded by its admission's
        script (one round trip less), which refuses, doing nothing, if the fleet has loaded one since: the
        request then comes back here (ScenarioMoved) and plays it."""
        if getattr(_turns, "moved", False):
            _turns.moved = False
            self._refresh()
        elif self.scenario is None:
            _turns.pending = [self._gen, repr(time.time()), _model(prompt, owner), dumps(body), TRANSCRIPT]
            _turns.request = (prompt, body, stream, owner)
            return play(prompt, None, stream)
        return self._play(prompt, body, stream, owner)

    def _play(self, prompt: Prompt, body: Any, stream: bool, owner: str) -> tuple[Prompt, StreamFault | None]:
        for _ in range(MAX_STALE):
            scenario = self.scenario
            rules: list[Any] = []
            for rule in scenario.rules if scenario else []:
                turns = rule.match.turns()
                rules += [rule.times or "", "1" if rule.match.holds(prompt, None) else "0",
                          ",".join(map(str, turns)) or "-1" if turns is not None else ""]
            result = self._direct(keys=[SCENARIO, FIRED, TRANSCRIPT_KEY], args=[
                self._gen, len(scenario.rules) if scenario else 0, len(scenario.turns) if scenario else 0,
                scenario.on_exhausted if scenario else "", repr(time.time()), _model(prompt, owner), dumps(body),
                TRANSCRIPT, *rules])
            if result[0] == b"ok":
                break
            self._refresh()
        else:
            raise RuntimeError("the scenario kept changing while a request was directed")
        turn, kind, index = int(result[1]), result[2].decode(), int(result[3])
        reply: Reply | None = None
        if kind == "error" and scenario is not None:
            raise exhausted(scenario, turn)
        if kind and scenario is not None:
            reply = scenario.rules[index] if kind == "rules" else scenario.turns[index]
        return play(prompt, reply, stream)
