"""From event records to verdicts, without Kafka or Faust: decoding, the processor, run
records, what is emitted, the silence timer, metrics."""
