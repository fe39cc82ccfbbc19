// Package simhook is the bridge between package sim and the packages of
// this module that drive a fabric from outside (package explore): sim fills
// in the variables in an init function, so that those packages reach the
// fabric's domain without sim exporting its engine.
package simhook

import "github.com/verbsim/verbsim/internal/domain"

// DomainOf returns the domain of a *sim.Fabric (nil for anything else). Set
// by package sim.
var DomainOf func(fabric any) *domain.Domain

// HandleOf maps an object the domain names (the Obj of a Waiter, an object
// passed to Observer.Created) to its public handle: a *sim.CQ, a
// *sim.CompChannel, a *sim.Context; the object itself when it has no other
// handle. Set by package sim.
var HandleOf func(obj any) any
