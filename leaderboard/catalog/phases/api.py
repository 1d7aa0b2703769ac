"""Host actions on a hidden label set's phases (its benchmark's team's hosts:
docs/hosts/teams.md) (docs/api.md, hidden label sets): reveal the
private part of the open phase; open the next phase with a fresh split."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.access import Action, benchmark_get_for
from leaderboard.catalog.models import Benchmark, HiddenPhase, LabelSet
from leaderboard.catalog.phases.selectors import hidden_label_set_get, hidden_phase_current
from leaderboard.catalog.phases.serializers import HiddenPhaseOpenInput, HiddenPhaseOutput
from leaderboard.catalog.phases.services import hidden_phase_open_next, hidden_phase_reveal
from leaderboard.common.api import error_responses, signed_in_user

# Anonymous callers 401; the benchmark's team decides the rest (403, or 404 when hidden).
HOST_PERMISSIONS = [IsAuthenticated]


def _label_set(request: Request, slug: str, label_set: str) -> LabelSet:
    try:
        benchmark = benchmark_get_for(user=request.user, slug=slug, action=Action.HOST)
        return hidden_label_set_get(benchmark=benchmark, slug=label_set)
    except (Benchmark.DoesNotExist, LabelSet.DoesNotExist):
        raise NotFound(f"no hidden label set {slug}/{label_set}") from None


def _phase(label_set: LabelSet) -> HiddenPhase:
    phase = hidden_phase_current(label_set_id=label_set.pk)
    if phase is None:
        raise NotFound(f"{label_set} has no phase")
    return phase


def _output(phase: HiddenPhase) -> Response:
    return Response(HiddenPhaseOutput(phase).data)


class HiddenPhaseRevealView(APIView):
    permission_classes = HOST_PERMISSIONS

    @extend_schema(
        operation_id="hidden_label_sets_reveal",
        summary="Reveal the private part of a hidden label set's open phase: the board shows "
                "its figures and the shake-up from the public part (its team's hosts; recorded: "
                "who and when; a second call changes nothing)",
        request=None,
        responses={200: HiddenPhaseOutput, **error_responses(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, label_set: str) -> Response:
        phase = _phase(_label_set(request, slug, label_set))
        hidden_phase_reveal(phase=phase, by=signed_in_user(request))
        return _output(phase)


class HiddenPhaseOpenView(APIView):
    permission_classes = HOST_PERMISSIONS

    @extend_schema(
        operation_id="hidden_label_sets_phase_open",
        summary="After a reveal, open the next phase of a hidden label set with a fresh split "
                "(its team's hosts); every participant's release mechanism starts again",
        request=HiddenPhaseOpenInput,
        responses={201: HiddenPhaseOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, label_set: str) -> Response:
        row = _label_set(request, slug, label_set)  # refused before the body is read
        form = HiddenPhaseOpenInput(data=request.data)
        form.is_valid(raise_exception=True)
        phase = hidden_phase_open_next(label_set=row, seed=form.validated_data["seed"])
        response = _output(phase)
        response.status_code = 201
        return response
