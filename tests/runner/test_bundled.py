import json
import zipfile

import numpy as np
import pytest

from bridge.runner import load_runner
from bridge.runner.bundled import default_model_path
from bridge.sim.episode import history_item
from mappings.actions import ACTIONS, METERS

OBS = {
    "timestep": 8,
    "day": 2,
    "slot": 0,
    "vitality": 0.7,
    "cognition": 0.6,
    "progress": 0.5,
    "serenity": 0.6,
    "connection": 0.5,
}
M = np.array([0.7, 0.6, 0.5, 0.6, 0.5])


def item(slot, action, response, deltas=None):
    return {
        "day": 0,
        "slot": slot,
        "meters": dict(zip(METERS, M.tolist(), strict=True)),
        "action": action,
        "response": response,
        "meter_deltas": deltas or {m: None for m in METERS},
    }


def test_artifact_is_small_npz_without_pickled_objects():
    path = default_model_path()
    assert path.stat().st_size <= 5 * 1024 * 1024
    with zipfile.ZipFile(path) as z:
        assert {n.split(".")[0] for n in z.namelist()} == {
            "meta",
            "accept_w",
            "delta_w",
            "delta_sd",
        }
    with np.load(path, allow_pickle=False) as data:  # raises if anything needed pickle
        meta = json.loads(str(data["meta"]))
    assert meta["split"] == "train" and isinstance(meta["seed"], int)
    # version 4: one expert per training family and the pooled model, on a leading axis;
    # 5: meter changes read at a per-person scale
    assert meta["model_version"] == "5" and meta["meter_scales"] == [0.5, 0.2]
    assert meta["experts"] == [*meta["families"], "pooled"]
    with np.load(path, allow_pickle=False) as data:
        assert {data[k].shape[0] for k in ("accept_w", "delta_w", "delta_sd")} == {
            len(meta["experts"])
        }
    assert 0 < meta["expert_temper"] <= 1 and 0 < meta["delta_weight"] <= 1


def test_bundled_returns_action_belief_and_one_line_rationale():
    rec = load_runner("bundled").recommend(OBS, [])
    assert (
        rec.action in ACTIONS
        and rec.runner == "bundled"
        and rec.runner_version.startswith("5-seed")
    )
    assert len(rec.belief) == 3 and all(0 <= b <= 1 for b in rec.belief)
    assert "\n" not in rec.rationale and "no answers yet" in rec.rationale


def test_ignored_morning_deep_work_points_to_a_late_chronotype():
    runner = load_runner("bundled")
    prior = runner.recommend(OBS, []).belief
    history = [item(0, "DEEP_WORK", "ignored") for _ in range(3)]
    history += [item(2, "DEEP_WORK", "accepted") for _ in range(2)]
    rec = runner.recommend(OBS, history)
    assert rec.belief[1] < prior[1] - 0.1  # M (morning preference) went down
    assert "morning DEEP_WORK ignored 3x" in rec.rationale and "late chronotype" in rec.rationale


def test_meter_changes_after_socializing_reveal_social_preference():
    runner = load_runner("bundled")
    drained = {
        "vitality": -0.12,
        "cognition": -0.03,
        "progress": -0.02,
        "serenity": -0.03,
        "connection": 0.14,
    }
    charged = {
        "vitality": +0.06,
        "cognition": -0.03,
        "progress": -0.02,
        "serenity": 0.05,
        "connection": 0.14,
    }
    low = runner.recommend(OBS, [item(2, "SOCIALIZE", "accepted", drained)] * 2).belief[0]
    high = runner.recommend(OBS, [item(2, "SOCIALIZE", "accepted", charged)] * 2).belief[0]
    assert low < 0.35 < 0.65 < high


def test_it_never_recommends_what_would_crash_a_meter():
    obs = {**OBS, "slot": 1, "vitality": 0.12, "cognition": 0.12}
    history = [item(1, "DEEP_WORK", "accepted") for _ in range(6)]  # a keen worker
    rec = load_runner("bundled").recommend(obs, history)
    assert rec.action not in ("DEEP_WORK", "ADMIN_WORK", "LEARN", "SOCIALIZE")


def test_copes_with_unknown_meters_and_unanswered_items():
    obs = {**OBS, **{m: None for m in METERS}}
    history = [item(0, "EXERCISE", "expired"), {**item(1, "LEARN", "rescheduled"), "meters": {}}]
    rec = load_runner("bundled").recommend(obs, history)
    assert rec.action in ACTIONS and len(rec.belief) == 3


def test_history_item_from_the_simulator_has_the_contract_shape():
    it = history_item(5, M, "SLEEP", True, M + 0.1)
    assert set(it) == {"day", "slot", "meters", "action", "response", "meter_deltas"}
    assert it["response"] == "accepted" and it["meter_deltas"]["vitality"] == pytest.approx(0.1)


# --- model version 4: one expert per training family, integrated out (issues 20, 22) ---


@pytest.fixture(scope="module")
def two_experts(tmp_path_factory):
    from bridge.sim.train import train

    path = tmp_path_factory.mktemp("experts") / "two.npz"
    train(
        path,
        seed=2,
        n_people=80,
        slots=112,
        families=("rhythm", "fatigue"),
        temper_people=0,
        pooled=False,
    )
    return str(path)


def _episode_history(model, family, index, slots=40):
    from bridge.runner.bundled import BundledRunner
    from bridge.sim.episode import run_episode
    from bridge.sim.evaluate import _family

    runner = BundledRunner(model)
    person = _family(family, calendars=False).person("in", index, 0)
    return runner, run_episode(runner, person, slots).history()


def test_a_v3_artifact_without_an_expert_axis_loads_as_one_expert(two_experts, tmp_path):
    from bridge.runner.bundled import BundledModel

    with np.load(two_experts, allow_pickle=False) as data:
        arrays = {k: np.asarray(data[k]) for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    assert meta["model_version"] == "5" and meta["experts"] == ["rhythm", "fatigue"]
    assert arrays["accept_w"].shape[0] == 2
    old_meta = {k: v for k, v in meta.items() if k != "experts"} | {"model_version": "3"}
    v3, v4 = tmp_path / "v3.npz", tmp_path / "v4-one.npz"
    np.savez(
        v3,
        meta=np.array(json.dumps(old_meta)),
        **{k: arrays[k][0] for k in ("accept_w", "delta_w", "delta_sd")},
    )
    np.savez(
        v4,
        meta=np.array(json.dumps(meta | {"experts": ["rhythm"]})),
        **{k: arrays[k][:1] for k in ("accept_w", "delta_w", "delta_sd")},
    )
    old, one = BundledModel(v3), BundledModel(v4)
    assert old.experts == ["rhythm+fatigue"] and old.accept_w.ndim == 4
    _, history = _episode_history(two_experts, "rhythm", 0, 20)
    np.testing.assert_allclose(
        old.log_joint_experts(history, offsets=(0.0, 0.5)),
        one.log_joint_experts(history, offsets=(0.0, 0.5)),
    )
    rec = load_runner("bundled", model=str(v3)).recommend(OBS, history)
    assert rec.action in ACTIONS and rec.runner_version == "3-seed2"
    # an artifact whose arrays and expert names disagree is refused, not misread
    bad = tmp_path / "bad.npz"
    np.savez(
        bad,
        meta=np.array(json.dumps(meta | {"experts": ["rhythm"]})),
        **{k: arrays[k] for k in ("accept_w", "delta_w", "delta_sd")},
    )
    with pytest.raises(ValueError, match="2 experts"):
        BundledModel(bad)


@pytest.mark.parametrize("family", ["rhythm", "fatigue"])
def test_a_person_of_one_family_is_read_by_that_familys_expert(two_experts, family):
    weights = []
    for index in range(4):
        runner, history = _episode_history(two_experts, family, index)
        share = runner.expert_posterior(history).sum((1, 2))
        assert share.sum() == pytest.approx(1.0)
        weights.append(share[runner.model.experts.index(family)])
        assert runner.expert_posterior([]).sum((1, 2)) == pytest.approx([0.5, 0.5])
    # 40 answers from one family's person put most of the weight on its expert
    assert np.median(weights) > 0.9 and min(weights) > 0.5, weights


def test_the_running_evidence_gives_the_fresh_posterior(two_experts):
    from bridge.runner.bundled import BundledRunner

    _, history = _episode_history(two_experts, "fatigue", 1, 30)
    runner = BundledRunner(two_experts)
    model = runner.model

    def fresh(h):
        logp = model.log_joint_experts(
            h, delta_weight=runner.delta_weight, offsets=runner.offsets
        )  # no evidence: read from scratch
        w = np.exp(logp)
        return w / w.sum()

    grown: list[dict] = []
    for h in history:  # one answer more per call, as the pipeline asks
        grown.append(h)
        np.testing.assert_allclose(runner.expert_posterior(grown), fresh(grown), atol=1e-6)
    assert len(runner.evidence.items) == len(history)
    # a late answer lands in the middle: only it is read, and the result is the same
    late = [dict(h) for h in history]
    late[10] = {**late[10], "response": None}
    runner = BundledRunner(two_experts)
    runner.expert_posterior(late)
    late[10]["response"] = history[10]["response"]  # filled in, in place
    np.testing.assert_allclose(runner.expert_posterior(late), fresh(history), atol=1e-6)
    # a changed answer starts over from the whole history
    changed = [dict(h) for h in history]
    changed[3] = {
        **changed[3],
        "response": "ignored" if history[3]["response"] == "accepted" else "accepted",
    }
    np.testing.assert_allclose(runner.expert_posterior(changed), fresh(changed), atol=1e-6)
    np.testing.assert_allclose(runner.expert_posterior(history), fresh(history), atol=1e-6)
    assert not np.allclose(fresh(changed), fresh(history), atol=1e-4)  # it did matter


def test_tempered_expert_evidence_spreads_the_weight_not_each_experts_reading(two_experts):
    from bridge.runner.bundled import load_model

    model = load_model(two_experts)
    _, history = _episode_history(two_experts, "fatigue", 0, 30)

    def per_expert(temper):
        logp = model.log_joint_experts(history, offsets=(0.0, 0.5), expert_temper=temper)
        top = logp.max((1, 2), keepdims=True)
        evidence = np.log(np.exp(logp - top).sum((1, 2), keepdims=True)) + top
        weights = np.exp(evidence.ravel() - evidence.max())
        return logp - evidence, weights / weights.sum()

    plain, w_plain = per_expert(1.0)
    tempered, w_tempered = per_expert(0.1)
    np.testing.assert_allclose(plain, tempered, atol=1e-6)  # same profile x offset reading
    # the log-odds between the experts shrink tenfold
    odds = np.log(w_plain[0] / w_plain[1]), np.log(w_tempered[0] / w_tempered[1])
    assert abs(odds[0]) > 1.0 and odds[1] == pytest.approx(odds[0] * 0.1, rel=1e-4)


def _with_meta(model: str, path, **changes) -> str:
    with np.load(model, allow_pickle=False) as data:
        arrays = {k: np.asarray(data[k]) for k in data.files}
    meta = json.loads(str(arrays.pop("meta"))) | changes
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    return str(path)


FIT_SCALES = [0.25, 0.5, 1.0, 2.0, 4.0]


def _fit_share_by_hand(model, history, logp):
    """The fit check item by item: each usable meter change's squared standardized
    residual under every (expert, profile), summed, read at each scale."""
    from bridge.runner.features import delta_context, meters_of
    from mappings.actions import METERS

    chi = np.zeros((len(model.experts), len(model.grid)))
    count = 0
    for h in history:
        if h.get("response") != "accepted" or not h.get("meter_deltas"):
            continue
        a = ACTIONS.index(h["action"])
        # (E, prof, meters) -> expected change per expert, profile and meter
        mean = np.einsum("d,edpm->epm", delta_context(int(h["slot"])), model.delta_w[:, a])
        expected = np.einsum("kp,epm->ekm", model.g, mean)
        before = meters_of(h.get("meters") or {})
        for j, m in enumerate(METERS):
            d = h["meter_deltas"].get(m)
            if d is None or not 0.005 < before[j] + d < 0.995:
                continue
            chi += ((d - expected[:, :, j]) / model.delta_sd[:, a, j][:, None]) ** 2
            count += 1
    parts = np.stack([-0.5 * w * chi + 0.5 * count * np.log(w) for w in FIT_SCALES])
    q = np.exp(parts - parts.max(0))
    post = np.exp(logp).sum(2)
    return float((post / post.sum() * q[FIT_SCALES.index(1.0)] / q.sum(0)).sum())


def test_the_expert_temper_applies_as_far_as_no_expert_fits_the_persons_changes(
    two_experts, tmp_path
):
    """An artifact's `fit_check_scales` (tried as model version 7, not shipped): plain
    Bayes for someone an expert explains to within its own noise, the tempered reading
    for someone it explains worse (wider) or suspiciously better (narrower), and in
    between the two posteriors weighed by the check's share (computed here item by item,
    in bridge.sim.trials as quadratic forms)."""
    from bridge.runner.bundled import BundledModel
    from bridge.runner.features import delta_context
    from bridge.sim.trials import TrialModel
    from mappings.actions import METERS

    bare = BundledModel(_with_meta(two_experts, tmp_path / "b.npz", expert_temper=0.1))
    gated = TrialModel(
        _with_meta(two_experts, tmp_path / "g.npz", expert_temper=0.1, fit_check_scales=FIT_SCALES)
    )
    _, history = _episode_history(two_experts, "rhythm", 2, 60)
    plain = gated.log_joint_experts(history, expert_temper=1.0)
    e, k, _ = np.unravel_index(plain.argmax(), plain.shape)  # the likeliest reading

    def changed(how):
        out = []
        for h in history:
            if h.get("meter_deltas"):
                a = ACTIONS.index(h["action"])
                expected = gated.g[k] @ np.einsum(
                    "d,dpm->pm", delta_context(int(h["slot"])), gated.delta_w[e, a]
                )
                sd = gated.delta_sd[e, a]
                h = {
                    **h,
                    "meter_deltas": {
                        m: how(v, expected[METERS.index(m)], sd[METERS.index(m)])
                        for m, v in h["meter_deltas"].items()
                    },
                }
            out.append(h)
        return out

    rng = np.random.default_rng(0)
    people = {  # the likeliest reading's expected changes, with noise of three spreads
        "own": changed(lambda _v, mean, sd: mean + rng.normal(0.0, sd)),
        "wide": changed(lambda _v, mean, sd: mean + rng.normal(0.0, 2.0 * sd)),
        "quiet": changed(lambda _v, mean, _sd: float(mean)),
    }

    def norm(lp):
        w = np.exp(lp - lp.max())
        return w / w.sum()

    shares = {}
    for name, h in people.items():
        untempered = gated.log_joint_experts(h, expert_temper=1.0)
        shares[name] = share = _fit_share_by_hand(gated, h, untempered)
        want = share * norm(untempered) + (1 - share) * norm(bare.log_joint_experts(h))
        np.testing.assert_allclose(norm(gated.log_joint_experts(h)), want, atol=1e-7)
    assert shares["own"] > 0.9 and shares["wide"] < 0.05 and shares["quiet"] < 0.05, shares
    with pytest.raises(ValueError, match="must include 1"):  # nothing to check against
        TrialModel(_with_meta(two_experts, tmp_path / "x.npz", fit_check_scales=[0.5, 2.0]))
    # with no meter change read yet there is nothing to check: the model's temper
    answers = [{**h, "meter_deltas": None} for h in history]
    np.testing.assert_allclose(gated.log_joint_experts(answers), bare.log_joint_experts(answers))


def test_tempering_survives_an_expert_the_history_rules_out_completely(two_experts, tmp_path):
    from bridge.runner.bundled import BundledRunner

    # meter changes counted fully (one weight, 4, not the per-person scales): the fatigue
    # expert's every profile underflows exp()
    model = _with_meta(two_experts, tmp_path / "one-weight.npz", meter_scales=[])
    runner, history = _episode_history(model, "rhythm", 1, 112)
    plain = runner.model.log_joint_experts(history, offsets=(0.0,), delta_weight=4.0)
    assert plain[1].max() < -745
    tempered = BundledRunner(model, expert_temper=0.1, delta_weight=4.0)
    post = tempered.expert_posterior(history)
    assert np.isfinite(post).all() and post.sum() == pytest.approx(1.0)
    assert 0 < post[1].sum() < post[0].sum()


def test_bernoulli_from_logits_matches_the_direct_formulas_even_at_extremes():
    from bridge.runner.bundled import _bernoulli

    z = np.array([-200.0, -40.0, -30.0, -8.0, -1.0, -1e-4, 0.0, 1e-4, 0.7, 8.0, 30.0, 200.0])
    p, h = _bernoulli(z.astype(np.float32))
    ref_p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
    q = np.clip(ref_p, 1e-300, 1.0)
    ref_h = -(q * np.log(q) + (1 - q) * np.log(np.clip(1 - ref_p, 1e-300, 1.0)))
    assert p.dtype == np.float32 and np.isfinite(h).all()
    np.testing.assert_allclose(p, ref_p, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, ref_h, rtol=1e-4, atol=2e-6)
    assert h[6] == pytest.approx(np.log(2.0), rel=1e-6)  # a coin flip teaches the most


def test_an_answer_changed_inside_a_nested_field_is_read_again(two_experts):
    from bridge.runner.bundled import BundledRunner

    _, history = _episode_history(two_experts, "fatigue", 1, 30)
    accepted = next(
        i for i, h in enumerate(history) if h["response"] == "accepted" and h["meter_deltas"]
    )
    runner = BundledRunner(two_experts)
    items = [{**h, "meter_deltas": dict(h["meter_deltas"])} for h in history]
    before = runner.expert_posterior(items)
    # the caller corrects a meter change in place, one level down (the same dict object)
    for k in items[accepted]["meter_deltas"]:
        items[accepted]["meter_deltas"][k] = 0.3
    after = runner.expert_posterior(items)
    fresh = np.exp(
        runner.model.log_joint_experts(
            items, delta_weight=runner.delta_weight, offsets=runner.offsets
        )
    )
    np.testing.assert_allclose(after, fresh / fresh.sum(), atol=1e-6)
    assert not np.allclose(before, after, atol=1e-4)  # the change did move it


def test_train_model_defaults_to_the_trainers_people():
    import inspect

    from bridge.cli.model import train_model
    from bridge.sim.train import DEFAULT_PEOPLE

    assert inspect.signature(train_model).parameters["people"].default == DEFAULT_PEOPLE


def test_meter_changes_are_read_at_the_scale_that_fits_the_person(two_experts, tmp_path):
    """A person whose changes the expert explains is read as at the sharp scale (0.5);
    the same answers with noisier changes as at the broad one (0.2): the scale is
    integrated out per person, not fixed for everyone (issue 20)."""
    from bridge.runner.bundled import load_model

    scaled = load_model(two_experts)
    assert scaled.meter_scales == (0.5, 0.2)
    fixed = load_model(_with_meta(two_experts, tmp_path / "fixed.npz", meter_scales=[]))
    assert fixed.meter_scales == ()
    _, clean = _episode_history(two_experts, "rhythm", 2, 60)
    rng = np.random.default_rng(0)
    noisy = [
        {
            **h,
            "meter_deltas": {k: v if v is None else v + rng.normal(0, 0.08) for k, v in d.items()},
        }
        if (d := h.get("meter_deltas"))
        else h
        for h in clean
    ]

    def posterior(model, history, weight=None):
        w = np.exp(model.log_joint_experts(history, delta_weight=weight))
        return (w / w.sum()).sum((0, 2))

    def distance(p, q):
        return float(np.abs(p - q).sum())

    for history, near, far in ((clean, 0.5, 0.2), (noisy, 0.2, 0.5)):
        mixed = posterior(scaled, history)
        to_near = distance(mixed, posterior(fixed, history, near))
        to_far = distance(mixed, posterior(fixed, history, far))
        assert to_near < to_far / 2, (near, to_near, to_far)
    # without meter changes there is nothing to scale: the answers alone decide
    bare = [{**h, "meter_deltas": {}} for h in clean]
    np.testing.assert_allclose(posterior(scaled, bare), posterior(fixed, bare, 0.5), atol=1e-9)


def test_leaving_out_ruled_out_profiles_changes_no_choice(monkeypatch):
    """The runner chooses over the profiles the answers leave in play (PRUNE): the same
    actions and, to float32 precision, the same P(accept) as over all 729."""
    import bridge.runner.bundled as bundled
    from bridge.sim.episode import run_episode
    from bridge.sim.evaluate import _family

    person = _family("rhythm", calendars=False).person("in", 3, 0)
    history = run_episode(bundled.BundledRunner(), person, 60).history()

    def choices(prune):
        monkeypatch.setattr(bundled, "PRUNE", prune)
        runner = bundled.BundledRunner()
        out = []
        for n in (0, 5, 20, 60):
            obs = {"slot": n % 4, **dict.fromkeys(METERS, 0.5)}
            rec = runner.recommend(obs, history[:n])
            out.append((rec.action, rec.extra["expected_accept"], rec.belief))
        return out

    default = bundled.PRUNE
    every, pruned = choices(0.0), choices(default)
    assert [c[0] for c in every] == [c[0] for c in pruned]
    assert [c[2] for c in every] == [c[2] for c in pruned]  # the belief reads every profile
    np.testing.assert_allclose([c[1] for c in every], [c[1] for c in pruned], atol=1e-5)
    # and it does leave profiles out once there are answers
    runner = bundled.BundledRunner()
    post = runner.posterior(history)
    assert (post < default * post.max()).sum() > 100


def _log_normal(x: np.ndarray, var: float) -> np.ndarray:
    return -0.5 * (x**2 / var + np.log(var))  # without 2 pi, as the runner (a constant)


def test_a_persons_own_effect_offsets_are_integrated_out_exactly(two_experts, tmp_path):
    """An artifact with effect_offset_sds (tried for issue 22, not shipped) reads each
    (action, meter) pair's changes with an offset of the person's own, N(0, sd^2),
    integrated out in closed form and mixed with no offset: the same, up to one constant,
    as integrating each offset out numerically."""
    from bridge.runner.bundled import Evidence, load_model
    from bridge.runner.features import delta_context
    from bridge.sim.trials import TrialEvidence, load_trial_model

    sd, w = 0.03, 0.5
    model = load_trial_model(
        _with_meta(two_experts, tmp_path / "offsets.npz", meter_scales=[w], effect_offset_sds=[sd])
    )
    assert model.effect_sds == (sd,)
    vit, ser = METERS[0], METERS[3]
    changes = [  # (action, slot, meter, change): two pairs, one read four times
        ("SOCIALIZE", 0, vit, 0.02),
        ("SOCIALIZE", 1, vit, -0.01),
        ("SOCIALIZE", 2, vit, 0.05),
        ("SOCIALIZE", 3, vit, 0.03),
        ("EXERCISE", 0, ser, 0.04),
        ("EXERCISE", 2, ser, 0.01),
    ]
    history = [
        {
            "slot": slot,
            "action": action,
            "response": "accepted",
            **dict.fromkeys(METERS, 0.5),
            "meter_deltas": {m: (change if m == meter else None) for m in METERS},
        }
        for action, slot, meter, change in changes
    ]
    evidence = TrialEvidence(model, None, (0.0,), keep=False)
    evidence.update(history)
    got = (evidence.log_likelihood(1.0) - evidence.accept)[:, :, 0]

    c, step = np.linspace(-0.25, 0.25, 5001, retstep=True)
    prior = np.exp(-0.5 * (c / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    want = np.zeros_like(got)
    for e in range(len(model.experts)):
        plain, shifted = np.zeros(len(model.g)), np.zeros(len(model.g))
        for action, meter in (("SOCIALIZE", vit), ("EXERCISE", ser)):
            a, m = ACTIONS.index(action), METERS.index(meter)
            rows = [(s, x) for act, s, mm, x in changes if act == action and mm == meter]
            mean = np.array([delta_context(s) @ model.delta_w[e, a, :, :, m] for s, _ in rows])
            resid = np.array([x for _, x in rows])[:, None] - mean @ model.g.T  # (items, K)
            var = model.delta_sd[e, a, m] ** 2 / w
            here = _log_normal(resid, var).sum(0)
            ref = here.max()
            inner = np.exp(np.stack([_log_normal(resid - x, var).sum(0) for x in c]) - ref)
            plain += here
            shifted += np.log((inner * prior[:, None]).sum(0) * step) + ref
        want[e] = np.logaddexp(plain, shifted) + np.log(0.5)
    np.testing.assert_allclose(got - got.max(), want - want.max(), atol=1e-6)
    # and the offsets matter here: without them the reading differs
    bare = Evidence(
        load_model(_with_meta(two_experts, tmp_path / "bare.npz", meter_scales=[w])),
        None,
        (0.0,),
        keep=False,
    )
    bare.update(history)
    ll = (bare.log_likelihood(1.0) - bare.accept)[:, :, 0]
    assert np.abs((ll - ll.max()) - (got - got.max())).max() > 0.1
