"""The one error type of checkpoint handling, and the codes it carries.

Every refusal and every failed run ends as a `CheckpointError` whose `code` is a short, stable
snake_case name (stored with the submission, shown by the API) and whose `message` says in
plain words what was wrong and, where it helps, what to upload instead.
"""

from __future__ import annotations

# Every code a CheckpointError may carry. The child process reports failures by code, and the
# parent accepts only codes listed here (anything else becomes "model_crashed"), so a confused
# child cannot invent new states.
CODES: frozenset[str] = frozenset(
    {
        # format detection (before anything is loaded)
        "pickle_refused",
        "unsupported_format",
        "checkpoint_too_large",
        "empty_file",
        # safetensors header inspection
        "safetensors_header_too_large",
        "safetensors_header_invalid",
        "safetensors_offsets_out_of_range",
        "safetensors_offsets_invalid",
        "safetensors_dtype",
        "safetensors_shape_mismatch",
        "safetensors_unexpected_key",
        "safetensors_missing_key",
        "safetensors_load_failed",
        # ONNX inspection
        "onnx_invalid",
        "onnx_external_data",
        "onnx_custom_domain",
        "onnx_input_shape",
        "onnx_input_type",
        "onnx_output_shape",
        # running the model
        "images_invalid",
        "model_crashed",
        "model_timeout",
        "model_out_of_memory",
        "model_bad_output",
    }
)


class CheckpointError(ValueError):
    """A checkpoint was refused, or running it failed; `code` names the reason."""

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:  # a typo in a code would silently split statistics by reason
            raise ValueError(f"unknown CheckpointError code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[type[CheckpointError], tuple[str, str]]:
        # the default rebuilds from self.args (one string) and would fail: Celery, copy and
        # multiprocessing all go through this
        return (CheckpointError, (self.code, self.message))
