// Package redis is a fleet Backend in Redis (fleetnode.Backend): the
// catalog in lease/redis under the fleet's key prefix P, and the side
// tables in one hash each, P+"fleet:addrs", P+"fleet:repos",
// P+"fleet:settings" and P+"fleet:handoffs".
package redis
