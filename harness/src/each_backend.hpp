#pragma once
// Internal to the harness: the walk both runners (run_case.cpp for
// attention, op_runner.cpp for the other ops) make over what they test.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "strata/registry.hpp"

namespace strata::harness::detail {

// For every compiled and available registry backend, then every runner of
// `extra`: a fresh Result r named after it, run(r, device, runner) (runner
// null for a registry backend), and r appended to results. An exception run
// throws is r's error and fails it.
// Result: has backend, error and pass; Extra: has name and device.
template <class Result, class Extra, class Run>
void run_each_backend(std::vector<Result>& results, const std::vector<Extra>& extra, Run&& run) {
  auto one = [&](const std::string& name, Device dev, const Extra* x) {
    Result r;
    r.backend = name;
    try {
      run(r, dev, x);
    } catch (const std::exception& e) {
      r.error = e.what();
      r.pass = false;
    }
    results.push_back(std::move(r));
  };
  for (const BackendInfo& info : Registry::get().backends()) {
    if (!info.compiled || !info.available) continue;
    one(info.name, info.device == DeviceType::cpu ? Device::cpu() : Device{info.device, 0},
        nullptr);
  }
  for (const Extra& x : extra) one(x.name, x.device, &x);
}

}  // namespace strata::harness::detail
