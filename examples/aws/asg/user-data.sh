#!/bin/bash
systemctl enable --now shop
