"""``--engine ray``: the same scoring as :func:`ragmeter.evaluate`, spread over Ray workers, rows back in input
order (``pip install 'ragmeter[ray]'``)."""
