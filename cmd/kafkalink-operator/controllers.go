package main

import "github.com/kafkalink/kafkalink/pkg/operator"

// controllers are the controllers the operator runs, one instance per watched namespace.
var controllers = []operator.NewControllerFunc{}
