#!/usr/bin/python3
"""Runs Extra-P's default modeler on the synthetic cases of the accuracy bench.

usage: extrap_models.py EXTRAP_SOURCE CASES_JSON OUT_JSON

EXTRAP_SOURCE is a folder holding Extra-P's `extrap` package (a snapshot of
github.com/extra-p/extrap; run_accuracy.sh unpacks one). CASES_JSON is what
`xdeep_modeling_accuracy --cases-out` writes. For every case the script models
the mean of the repetitions with Extra-P's defaults ("Default" modeler, as
Extra-P's command line does) and writes the model, its term structure and its
predictions at the case's held-out points.
"""
import json
import sys
import time


def structure(function, dims):
    """Terms as [[param, poly exponent, log exponent], ...] per term."""
    from extrap.entities.terms import MultiParameterTerm
    out = []
    for term in function.compound_terms:
        pairs = term.parameter_term_pairs if isinstance(term, MultiParameterTerm) else [(0, term)]
        factors = []
        for param, compound in pairs:
            poly, log = 0.0, 0.0
            for simple in compound.simple_terms:
                if simple.term_type == 'polynomial':
                    poly += float(simple.exponent)
                else:
                    log += float(simple.exponent)
            if poly != 0 or log != 0:
                factors.append([int(param), poly, log])
        if factors:
            out.append(factors)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.path.insert(0, sys.argv[1])
    from extrap.entities.callpath import Callpath
    from extrap.entities.coordinate import Coordinate
    from extrap.entities.experiment import Experiment
    from extrap.entities.measurement import Measurement
    from extrap.entities.metric import Metric
    from extrap.entities.parameter import Parameter
    from extrap.modelers.model_generator import ModelGenerator

    with open(sys.argv[2]) as f:
        written = json.load(f)
    cases = written['cases']
    results = []
    start = time.monotonic()
    for case in cases:
        experiment = Experiment()
        for name in case['params']:
            experiment.add_parameter(Parameter(name))
        callpath, metric = Callpath('case'), Metric('time')
        experiment.add_callpath(callpath)
        experiment.add_metric(metric)
        for point in case['points']:
            coordinate = Coordinate(*point['x'])
            experiment.add_coordinate(coordinate)
            experiment.add_measurement(Measurement(coordinate, callpath, metric, point['v']))
        generator = ModelGenerator(experiment)
        generator.model_all()
        model = generator.models[(callpath, metric)]
        function = model.hypothesis.function
        held_out = [float(function.evaluate(x if len(x) > 1 else x[0])) for x in case['held_out']]
        results.append({
            'id': case['id'],
            'model': function.to_string(*[Parameter(n) for n in case['params']]),
            'terms': structure(function, len(case['params'])),
            'held_out': held_out,
        })
    with open(sys.argv[3], 'w') as f:
        json.dump({'modeler': 'Extra-P (Default modeler)', 'seconds': time.monotonic() - start,
                   'seed': written.get('seed'), 'results': results}, f)


if __name__ == '__main__':
    main()
