"""The rule catalog: every rule class, by code, in code order.

``RULES`` is built once at import; the checker builds its dispatch table (effect -> rule) from the
selected subset once per run, not per file.
"""

from __future__ import annotations

from graphguard.rules.base import Rule
from graphguard.rules.gg101_op_in_session_loop import OpInSessionLoop
from graphguard.rules.gg102_saver_in_session_loop import SaverInSessionLoop
from graphguard.rules.gg103_initializer_in_session_loop import InitializerInSessionLoop
from graphguard.rules.gg104_assign_in_session_loop import AssignInSessionLoop
from graphguard.rules.gg105_constant_in_session_loop import ConstantInSessionLoop
from graphguard.rules.gg106_tensor_operator_in_session_loop import TensorOperatorInSessionLoop
from graphguard.rules.gg107_placeholder_in_session_loop import PlaceholderInSessionLoop
from graphguard.rules.gg108_graph_import_in_session_loop import GraphImportInSessionLoop
from graphguard.rules.gg109_iterator_in_session_loop import IteratorInSessionLoop
from graphguard.rules.gg110_summary_in_session_loop import SummaryInSessionLoop
from graphguard.rules.gg111_graph_not_reset_in_loop import GraphNotResetInLoop
from graphguard.rules.gg201_model_rebuilt_in_loop import ModelRebuiltInLoop
from graphguard.rules.gg202_model_retained_across_iterations import ModelRetainedAcrossIterations
from graphguard.rules.gg301_python_number_retraces_function import PythonNumberRetracesFunction
from graphguard.rules.gg302_tf_function_created_in_loop import TfFunctionCreatedInLoop
from graphguard.rules.gg303_keras_predict_in_loop import KerasPredictInLoop
from graphguard.rules.gg304_variable_created_in_tf_function import VariableCreatedInTfFunction
from graphguard.rules.gg305_model_recompiled_in_loop import ModelRecompiledInLoop
from graphguard.rules.gg306_keras_fit_per_step import KerasFitPerStep

RULES: dict[str, type[Rule]] = {
    rule.CODE: rule
    for rule in (
        OpInSessionLoop,
        SaverInSessionLoop,
        InitializerInSessionLoop,
        AssignInSessionLoop,
        ConstantInSessionLoop,
        TensorOperatorInSessionLoop,
        PlaceholderInSessionLoop,
        GraphImportInSessionLoop,
        IteratorInSessionLoop,
        SummaryInSessionLoop,
        GraphNotResetInLoop,
        ModelRebuiltInLoop,
        ModelRetainedAcrossIterations,
        PythonNumberRetracesFunction,
        TfFunctionCreatedInLoop,
        KerasPredictInLoop,
        VariableCreatedInTfFunction,
        ModelRecompiledInLoop,
        KerasFitPerStep,
    )
}

#: Codes reported by the checker itself rather than by a rule: (code, name, summary).
CHECKER_CODES: dict[str, tuple[str, str]] = {
    "GG001": ("syntax-error", "The file (or a notebook cell) mentions TensorFlow or Keras and could not be parsed "
                              "or decoded (a syntax error, NUL bytes, an unknown encoding); a notebook cell only when GG001 is "
                              "selected by name (Python 2 code is read). Other files that do not parse are skipped."),
    "GG002": ("io-error", "The file or folder could not be read (permissions, not a regular file), or is larger "
                          "than max-file-bytes."),
}

__all__ = ["RULES", "CHECKER_CODES", "Rule"]
