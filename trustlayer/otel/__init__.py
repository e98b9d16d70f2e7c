"""OpenTelemetry in and out: ``trustlayer import otel`` turns trace exports (GenAI
semantic conventions or OpenInference spans) into runs (:mod:`.convert`), and
:mod:`.verdicts` exports final verdicts as ``gen_ai.evaluation.result`` events. Reading
needs nothing; the SDK (the ``otel`` extra) only to write spans or export verdicts."""
