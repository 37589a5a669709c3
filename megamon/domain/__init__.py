"""The domain: events, records, observations, summaries and reports. No I/O and no clock;
``codec`` is the one place the durable JSON format is read and written."""
