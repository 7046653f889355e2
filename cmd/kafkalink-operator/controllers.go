package main

import (
	"github.com/kafkalink/kafkalink/pkg/bindingcontroller"
	"github.com/kafkalink/kafkalink/pkg/gatewaycontroller"
	"github.com/kafkalink/kafkalink/pkg/operator"
)

// controllers are the controllers the operator runs, one instance per watched namespace.
var controllers = []operator.NewControllerFunc{
	bindingcontroller.New,
	gatewaycontroller.New,
}
